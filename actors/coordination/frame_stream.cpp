#include "actors/coordination/frame_stream.hpp"

namespace lifeboat {

frame_stream::frame_stream(tls_channel tls) : tls_(std::move(tls)) {}

caf::error frame_stream::receive(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                                 const char* data, size_t size) {
  if (!tls_) {
    reader_.append(data, size);
    return caf::none;
  }
  auto err = tls_->feed(data, size);
  // A handshake answer goes out even when what came in ends the session: a
  // TLS alert tells the peer why. Otherwise it waits in the broker's buffer
  // for what the caller answers to the frames (the client's Finished and its
  // join share one write, and wake the service once), or for flush.
  if (err) {
    flush(self, hdl);
    return err;
  }
  buffer_ciphertext(self, hdl);
  auto plain = tls_->take_plaintext();
  reader_.append(plain.data(), plain.size());
  return caf::none;
}

void frame_stream::send(caf::io::abstract_broker* self, caf::io::connection_handle hdl,
                        const std::vector<char>& bytes) {
  if (!tls_) {
    write_bytes(self, hdl, bytes);
    return;
  }
  tls_->write(bytes.data(), bytes.size());
  flush(self, hdl);
}

void frame_stream::buffer_ciphertext(caf::io::abstract_broker* self,
                                     caf::io::connection_handle hdl) {
  auto out = tls_->take_ciphertext();
  if (out.empty()) return;
  self->write(hdl, out.size(), out.data());
  unflushed_ = true;
}

void frame_stream::flush(caf::io::abstract_broker* self, caf::io::connection_handle hdl) {
  if (!tls_) return;
  buffer_ciphertext(self, hdl);
  if (!unflushed_) return;
  self->flush(hdl);
  unflushed_ = false;
}

}  // namespace lifeboat
