#include "actors/status/status_http_server.hpp"

// All Boost.Beast code of the status endpoint lives in this one translation
// unit: Beast is expensive to compile, and nothing else needs to see it.

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "messages/address.hpp"
#include "messages/background_thread.hpp"
#include "messages/errors.hpp"
#include "messages/log.hpp"

namespace lifeboat {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr const char* log_component = "status_http_server";
constexpr const char* server_header = "lifeboat";
constexpr const char* plain_text = "text/plain; charset=utf-8";
constexpr std::chrono::milliseconds accept_retry_delay{100};

class session;

// A parse failure or a limit violation, as opposed to the peer closing or
// resetting the connection: only the former earns a 400.
bool is_protocol_error(const beast::error_code& ec) {
  return &ec.category() == &make_error_code(http::error::bad_method).category();
}

}  // namespace

struct status_http_server::impl {
  explicit impl(const status_http_limits& config) : cfg(config) {}

  void accept();
  void retry_accept();

  // Members read by sessions are declared before the io_context, so that they
  // outlive the handlers (and sessions) it destroys when it goes away.
  const status_http_limits cfg;
  handler fn;
  std::unordered_map<uint64_t, std::weak_ptr<session>> pending;  // I/O thread only
  uint64_t next_id = 1;                                          // I/O thread only
  std::size_t open_connections = 0;                              // I/O thread only
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bad_requests{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> reply_timeouts{0};
  std::mutex stop_mutex;
  bool stopped = false;

  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  std::thread thread;
};

namespace {

class session : public std::enable_shared_from_this<session> {
 public:
  session(status_http_server::impl& srv, tcp::socket socket)
      : srv_(srv), stream_(std::move(socket)), reply_timer_(srv.ioc) {
    ++srv_.open_connections;
  }

  ~session() { --srv_.open_connections; }

  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.cfg.header_limit));
    parser_->body_limit(srv_.cfg.body_limit);
    // One deadline for the whole request: a client that trickles bytes
    // (slowloris) is cut off just like one that sends nothing.
    stream_.expires_after(srv_.cfg.read_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void respond(uint64_t id, status_http_reply reply) {
    if (id != awaiting_) return;
    awaiting_ = 0;
    reply_timer_.cancel();
    write(std::move(reply), keep_alive_);
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      ++srv_.timeouts;
      return;  // the stream has already closed the socket
    }
    if (ec && is_protocol_error(ec) && ec != http::error::end_of_stream) {
      ++srv_.bad_requests;
      return write(status_http_reply{400, plain_text, "bad request\n", {}}, false);
    }
    if (ec) return close();
    const auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    ++srv_.requests;
    awaiting_ = srv_.next_id++;
    srv_.pending.emplace(awaiting_, weak_from_this());
    // While the reply is being built nothing is read, so the read deadline
    // does not apply; the reply timer bounds the wait instead.
    stream_.expires_never();
    reply_timer_.expires_after(srv_.cfg.reply_timeout);
    reply_timer_.async_wait([self = shared_from_this(), id = awaiting_](beast::error_code err) {
      if (err) return;
      self->srv_.pending.erase(id);
      ++self->srv_.reply_timeouts;
      self->respond(id, status_http_reply{503, plain_text, "status not available in time\n", {}});
    });
    status_http_request request{std::string{req.method_string()}, std::string{req.target()}};
    if (!srv_.fn(request, awaiting_)) {
      srv_.pending.erase(awaiting_);
      respond(awaiting_, status_http_reply{503, plain_text, "shutting down\n", {}});
    }
  }

  void write(status_http_reply reply, bool keep_alive) {
    response_.emplace(static_cast<http::status>(reply.status), version_);
    response_->set(http::field::server, server_header);
    response_->set(http::field::content_type, reply.content_type);
    response_->set(http::field::cache_control, "no-store");
    for (auto& [name, value] : reply.headers) response_->set(name, value);
    response_->keep_alive(keep_alive);
    response_->body() = std::move(reply.body);
    response_->prepare_payload();
    // A client that does not read its response is bounded like a slow reader.
    stream_.expires_after(srv_.cfg.read_timeout);
    http::async_write(stream_, *response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
                        if (ec || !keep_alive) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  status_http_server::impl& srv_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  asio::steady_timer reply_timer_;
  uint64_t awaiting_ = 0;  // id of the request being answered; 0: none
  bool keep_alive_ = false;
  unsigned version_ = 11;
};

}  // namespace

void status_http_server::impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      log(log_level::warning, log_component, "accept failed: ", ec.message());
      return retry_accept();
    }
    if (open_connections >= cfg.max_connections) {
      ++rejected_connections;
      socket.close(ec);
    } else {
      std::make_shared<session>(*this, std::move(socket))->read();
    }
    accept();
  });
}

// Accept errors such as running out of file descriptors persist for a while;
// retrying at once would spin the I/O thread.
void status_http_server::impl::retry_accept() {
  accept_retry.expires_after(accept_retry_delay);
  accept_retry.async_wait([this](beast::error_code ec) {
    if (!ec) accept();
  });
}

caf::expected<std::unique_ptr<status_http_server>> status_http_server::bind(
    uint16_t port, const status_http_limits& cfg, const std::string& host) {
  auto state = std::make_unique<impl>(cfg);
  beast::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec)
    return make_error(errc::invalid_config,
                      "status endpoint address '" + host + "' is no IPv4 or IPv6 address");
  tcp::endpoint endpoint{address, port};
  auto where = host_port(host, port);
  if (state->acceptor.open(endpoint.protocol(), ec); ec)
    return make_error(errc::unavailable, "cannot open a socket for " + where + ": " + ec.message());
  state->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (state->acceptor.bind(endpoint, ec); ec)
    return make_error(errc::unavailable, "cannot bind " + where + ": " + ec.message());
  if (state->acceptor.listen(asio::socket_base::max_listen_connections, ec); ec)
    return make_error(errc::unavailable, "cannot listen on " + where + ": " + ec.message());
  return std::unique_ptr<status_http_server>{new status_http_server(std::move(state))};
}

status_http_server::status_http_server(std::unique_ptr<impl> ptr) : impl_(std::move(ptr)) {}

status_http_server::~status_http_server() { stop(); }

uint16_t status_http_server::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void status_http_server::serve(handler fn) {
  impl_->fn = std::move(fn);
  impl_->accept();
  impl_->thread = background_thread([state = impl_.get()] {
    name_this_thread("lifeboat.status");
    state->ioc.run();
  });
}

void status_http_server::complete(uint64_t id, status_http_reply reply) {
  asio::post(impl_->ioc, [state = impl_.get(), id, reply = std::move(reply)]() mutable {
    auto i = state->pending.find(id);
    if (i == state->pending.end()) return;
    auto target = i->second.lock();
    state->pending.erase(i);
    if (target) target->respond(id, std::move(reply));
  });
}

void status_http_server::stop() {
  std::lock_guard<std::mutex> guard{impl_->stop_mutex};
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // The I/O thread is gone, so touching the acceptor here races with nothing.
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

status_http_stats status_http_server::stats() const {
  return {impl_->requests.load(), impl_->bad_requests.load(), impl_->timeouts.load(),
          impl_->rejected_connections.load(), impl_->reply_timeouts.load()};
}

}  // namespace lifeboat
