// The extension module `lifeboat._lifeboat`, re-exported by the package
// `lifeboat`: the handler API for trainers written in Python (PyTorch, JAX,
// NumPy, ...), a thin layer over the public C++ API.
//
//   state = lifeboat.CheckpointState()
//   state.add_buffer("weights", weights)        # any writable C-contiguous buffer
//   config = lifeboat.TerminationConfig(grace_period=30.0)
//   with lifeboat.PreemptionCheckpointHandler(state, "ckpt", config) as handler:
//       with handler.watch_preemption_scope():
//           while handler.total_run_calls < steps:
//               handler.run(train_step, batch)
//
// Errors: ConfigError (a ValueError) for bad configuration, PeerError (with
// origin_rank and lost) when a worker failed or was lost.
//
// Lifeboat calls some Python callables on threads of its own (the
// termination watcher on its polling thread) and drops its copies of them
// wherever it ends; each call and the last release take the GIL. Calls that
// may block for long (joining, restoring, barriers, closing) release the GIL,
// so such a thread is never kept waiting behind the trainer's thread.

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lifeboat/lifeboat.hpp"

namespace py = pybind11;

namespace {

using seconds_d = std::chrono::duration<double>;

// `seconds` of the setting `name` as a Duration. NaN, an infinity or a count
// beyond what Duration holds is a ConfigError naming the setting: the cast
// itself would be undefined, and came out as -9223372036854775808 ms.
template <class Duration>
Duration from_seconds(double seconds, const char* name) {
  const double limit = std::chrono::duration_cast<seconds_d>(Duration::max()).count();
  if (!std::isfinite(seconds) || std::abs(seconds) >= limit)
    throw lifeboat::config_error(std::string{name} + " must be a finite number of seconds, got " +
                                 py::str(py::float_(seconds)).cast<std::string>());
  return std::chrono::duration_cast<Duration>(seconds_d{seconds});
}

// A Python callable that C++ may copy, call and drop on any thread.
class python_callable {
 public:
  explicit python_callable(py::object fn)
      : fn_(new py::object(std::move(fn)), [](py::object* p) {
          py::gil_scoped_acquire gil;
          delete p;
        }) {}

  template <class... Ts>
  void operator()(Ts&&... xs) const {
    py::gil_scoped_acquire gil;
    (*fn_)(std::forward<Ts>(xs)...);
  }

  // The result as R, converted while the GIL is still held.
  template <class R, class... Ts>
  R call(Ts&&... xs) const {
    py::gil_scoped_acquire gil;
    return (*fn_)(std::forward<Ts>(xs)...).template cast<R>();
  }

 private:
  std::shared_ptr<py::object> fn_;
};

// A callable given for `name`; anything else is a TypeError now rather than
// an error on lifeboat's thread at the first save or notice.
python_callable callable_for(const char* name, py::object fn) {
  if (!PyCallable_Check(fn.ptr()))
    throw py::type_error(std::string{name} + " must be callable, got " +
                         py::str(py::type::of(fn).attr("__name__")).cast<std::string>());
  return python_callable{std::move(fn)};
}

// "TypeName: message": a Python exception on one line, as the other workers
// get it (str() of error_already_set adds the traceback).
std::string exception_line(const py::handle& type, const py::handle& value) {
  return py::str(type.attr("__name__")).cast<std::string>() + ": " +
         py::str(value).cast<std::string>();
}

// A Python exception from a training step, as run reports it to the other
// workers: "TypeName: message" on one line (what() of error_already_set adds
// the traceback). Raised again here as the original exception.
class step_error : public std::runtime_error {
 public:
  explicit step_error(py::error_already_set e)
      : std::runtime_error(one_line(e)), original_(std::move(e)) {}
  // Hands the original exception back to Python (once).
  void restore() { original_.restore(); }

 private:
  static std::string one_line(const py::error_already_set& e) {
    return exception_line(e.type(), e.value());
  }
  py::error_already_set original_;
};

// TerminationConfig's `signals` as names: each a name ("SIGUSR1") or a
// number, as Python's signal module has them (signal.SIGUSR1, an IntEnum),
// in a list or alone. Seen: `signals=[signal.SIGUSR1]`, the natural way in
// Python, raised pybind11's TypeError listing the whole constructor.
std::vector<std::string> signal_names(const py::object& signals) {
  auto one = [](const py::handle& s) -> std::string {
    if (py::isinstance<py::str>(s)) return s.cast<std::string>();
    if (py::isinstance<py::int_>(s) && !py::isinstance<py::bool_>(s)) {
      try {
        return py::module_::import("signal").attr("Signals")(s).attr("name").cast<std::string>();
      } catch (py::error_already_set&) {
        throw lifeboat::config_error("unknown signal number " + py::str(s).cast<std::string>());
      }
    }
    throw lifeboat::config_error(
        "signals: expected signal names (\"SIGTERM\") or numbers "
        "(signal.SIGTERM), got " +
        py::repr(s).cast<std::string>());
  };
  // One alone: a name (a str is iterable, by character), a number, or what
  // one() refuses.
  if (py::isinstance<py::str>(signals) || !py::isinstance<py::iterable>(signals))
    return {one(signals)};
  std::vector<std::string> names;
  for (auto s : signals) names.push_back(one(s));
  return names;
}

lifeboat::termination_config make_config(
    py::object termination_watcher_fn, py::object exit_fn, std::optional<double> grace_period,
    py::object save_fn, const py::object& signals,
    std::optional<std::vector<std::string>> notice_sources, std::optional<int> restart_code,
    double poll_interval, double safety_factor, int max_to_keep, int64_t save_every_steps,
    double save_every_seconds, double heartbeat_timeout, std::optional<double> hang_timeout) {
  lifeboat::termination_config c;
  if (!termination_watcher_fn.is_none()) {
    auto fn = callable_for("termination_watcher_fn", termination_watcher_fn);
    // True as Python's `if` takes it, as the reference polls its watcher: one
    // that returns the notice it found (a string, a dict) gives a notice.
    // Seen: returning "maintenance" was a warning each poll ("Unable to cast
    // Python instance to C++ type") and no notice.
    // What it raises is logged on one line, without pybind11's "At: ..."
    // traceback lines (the poll watcher logs it and polls on).
    c.termination_watcher_fn = [fn] {
      py::gil_scoped_acquire gil;
      try {
        return static_cast<bool>(py::bool_(fn.call<py::object>()));
      } catch (py::error_already_set& e) {
        throw std::runtime_error(exception_line(e.type(), e.value()));
      }
    };
  }
  if (!exit_fn.is_none()) {
    auto fn = callable_for("exit_fn", exit_fn);
    c.exit_fn = [fn] { fn(); };
  }
  if (grace_period)
    c.grace_period = from_seconds<std::chrono::milliseconds>(*grace_period, "grace_period");
  if (!save_fn.is_none()) {
    auto fn = callable_for("save_fn", save_fn);
    // Called inside run at the step of the save: what it raises fails that
    // step as the step's own exception would, one line to the peers. Before,
    // they got the pybind11 text with its traceback ("At: ...") in it.
    c.save_fn = [fn](int64_t step, const std::string& dir) {
      py::gil_scoped_acquire gil;
      try {
        fn(step, dir);
      } catch (py::error_already_set& e) {
        throw step_error{std::move(e)};
      }
    };
  }
  c.signals = signal_names(signals);
  c.notice_sources = std::move(notice_sources);
  c.restart_code = restart_code;
  c.poll_interval = from_seconds<std::chrono::milliseconds>(poll_interval, "poll_interval");
  c.safety_factor = safety_factor;
  c.max_to_keep = max_to_keep;
  c.save_every_steps = save_every_steps;
  // The C++ field counts whole seconds: 0.5 would become 0, no backups at
  // all, without a word.
  if (std::isfinite(save_every_seconds) && save_every_seconds != std::floor(save_every_seconds))
    throw lifeboat::config_error("save_every_seconds counts whole seconds, got " +
                                 py::str(py::float_(save_every_seconds)).cast<std::string>());
  c.save_every_seconds =
      from_seconds<std::chrono::seconds>(save_every_seconds, "save_every_seconds");
  c.heartbeat_timeout =
      from_seconds<std::chrono::milliseconds>(heartbeat_timeout, "heartbeat_timeout");
  if (hang_timeout)
    c.hang_timeout = from_seconds<std::chrono::milliseconds>(*hang_timeout, "hang_timeout");
  return c;
}

// Exceptions that end a worker as it asked, which are no failure: SystemExit
// (sys.exit: early stopping, every worker at one step) and GeneratorExit.
bool is_exit(const py::handle& type) {
  return PyObject_IsSubclass(type.ptr(), PyExc_SystemExit) == 1 ||
         PyObject_IsSubclass(type.ptr(), PyExc_GeneratorExit) == 1;
}

class python_handler;

// The handler open in this process (one at most: a second is refused), which
// the sys.excepthook it installed reports to. GIL-protected.
python_handler* open_python_handler = nullptr;

// The handler, closed explicitly (close(), or leaving its `with` block) or
// when Python collects it. What it was stays readable once it is closed
// (total_run_calls, rank, world_size): a trainer prints its step count, or
// rank 0 alone exports the final model, after the `with` block, where a
// RuntimeError ended a finished worker with a failure. Every other method of
// a closed one raises.
class python_handler {
 public:
  // What a closed handler still answers: its values as it closed.
  struct facts {
    int64_t total_run_calls = 0;
    int rank = 0;
    int world_size = 0;
  };

  python_handler(lifeboat::checkpoint_state& state, const std::filesystem::path& dir,
                 lifeboat::termination_config config) {
    {
      py::gil_scoped_release unlocked;
      handler_ = std::make_unique<lifeboat::preemption_checkpoint_handler>(state, dir.string(),
                                                                           std::move(config));
    }
    // A hung rank's stacks: lifeboat signals its training thread, Python's
    // faulthandler writes every Python thread's stack and then chains to
    // lifeboat's handler, which writes the native one.
    py::module_::import("faulthandler")
        .attr("register")(lifeboat::stack_dump_signal(), py::arg("all_threads") = true,
                          py::arg("chain") = true);
    install_excepthook();
  }

  ~python_handler() { close(); }

  // Python left the training loop by an exception (`type`, `value`) outside
  // run(): leaving the handler's `with` block, or uncaught (sys.excepthook).
  // The other workers train on and would wait for this rank at their next
  // save or step until the hang bound (30 s, and its failure then named a
  // hang): it is reported as this rank's failure, and the handler closed.
  void leave_by_exception(const py::handle& type, const py::handle& value) {
    if (handler_ && !is_exit(type)) handler_->report_left_by_exception(exception_line(type, value));
    close();
  }

  facts read() const {
    if (!handler_) return closed_;
    return {handler_->total_run_calls(), handler_->rank(), handler_->world_size()};
  }

  // Waits for a save in flight and meets the other workers at the end, as the
  // C++ handler's destructor does.
  void close() {
    remove_excepthook();
    if (handler_) closed_ = read();
    // Taken out while the GIL is held: a callable that runs on lifeboat's
    // thread meanwhile finds the handler closed, never half destroyed.
    auto closing = std::move(handler_);
    py::gil_scoped_release unlocked;
    closing.reset();
  }

  lifeboat::preemption_checkpoint_handler& get() {
    if (!handler_) throw std::logic_error("the handler is closed");
    return *handler_;
  }

 private:
  // An exception that ends the script while the handler is open, outside
  // its `with` block (a handler kept in a variable), never meets __exit__:
  // sys.excepthook reports it (leave_by_exception), then calls the hook it
  // replaced, which prints it.
  void install_excepthook() {
    auto sys = py::module_::import("sys");
    previous_hook_ = sys.attr("excepthook");
    hook_ = py::cpp_function(
        [previous = previous_hook_](py::object type, py::object value, py::object traceback) {
          if (open_python_handler != nullptr) open_python_handler->leave_by_exception(type, value);
          return previous(type, value, traceback);
        });
    sys.attr("excepthook") = hook_;
    open_python_handler = this;
  }

  // Puts the hook it replaced back, unless another replaced it since. Also
  // from the destructor, while Python finalizes: nothing may escape. The
  // hook itself lives on with the handler: it may be running now (it closes
  // the handler), and Python calls sys.excepthook through a borrowed
  // reference, so the handler's is what keeps it alive.
  void remove_excepthook() {
    if (open_python_handler == this) open_python_handler = nullptr;
    if (!hook_) return;
    try {
      auto sys = py::module_::import("sys");
      if (py::object{sys.attr("excepthook")}.is(hook_)) sys.attr("excepthook") = previous_hook_;
    } catch (py::error_already_set&) {
    }
  }

  std::unique_ptr<lifeboat::preemption_checkpoint_handler> handler_;
  facts closed_;
  py::object hook_;
  py::object previous_hook_;
};

// What a step raises that is no failure, which run lets pass unreported and
// uncounted (lifeboat::step_exit): SystemExit (sys.exit: the worker ends as
// the step asked) and StopIteration (the step took the next batch from an
// iterator that ran out: the loop ends its epoch). Raised again here as it was.
class step_passed_through : public lifeboat::step_exit {
 public:
  explicit step_passed_through(py::error_already_set e) : original_(std::move(e)) {}
  void restore() { original_.restore(); }

 private:
  py::error_already_set original_;
};

// PeerError and ConfigError, created with the module (which keeps them alive).
py::handle peer_error_type;
py::handle config_error_type;

// Raises `e` in Python as PeerError with its origin_rank and lost.
void set_peer_error(const lifeboat::peer_error& e) {
  py::object error = py::reinterpret_borrow<py::object>(peer_error_type)(e.what());
  error.attr("origin_rank") = e.origin_rank();
  error.attr("lost") = e.lost();
  PyErr_SetObject(peer_error_type.ptr(), error.ptr());
}

// handler.run(fn, *args, **kwargs) as a METH_FASTCALL method: fn gets the
// arguments as they came, without the tuple and dict that pybind11's
// dispatch builds for py::args and py::kwargs and unpacks again for the
// call. Those cost several times the runtime's own work per step
// (bench/python_step_bench.py), which is what a trainer pays every step.
PyObject* run_step(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "run() needs the step to call");
    return nullptr;
  }
  try {
    auto& handler = py::cast<python_handler&>(py::handle(self)).get();
    return handler
        .run([&] {
          auto* result = PyObject_Vectorcall(args[0], args + 1, nargs - 1, kwnames);
          if (result == nullptr) {
            if (PyErr_ExceptionMatches(PyExc_SystemExit) ||
                PyErr_ExceptionMatches(PyExc_StopIteration))
              throw step_passed_through{py::error_already_set{}};
            throw step_error{py::error_already_set{}};
          }
          return py::reinterpret_steal<py::object>(result);
        })
        .release()
        .ptr();
  } catch (step_error& e) {
    e.restore();
  } catch (step_passed_through& e) {
    e.restore();
  } catch (const lifeboat::peer_error& e) {
    set_peer_error(e);
  } catch (const lifeboat::config_error& e) {
    PyErr_SetString(config_error_type.ptr(), e.what());
  } catch (py::error_already_set& e) {
    // What exit_fn raised after the final commit, raised again as it was.
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// watch_preemption_scope(): the C++ scope guard acts in its destructor while
// an exception unwinds the stack; a C++ exception raised and caught in
// __exit__ gives it that moment when a Python exception leaves the block.
struct preemption_scope {
  python_handler& handler;

  bool exit(const py::object& exc_type, const py::object& value, const py::object& traceback) {
    if (exc_type.is_none()) return false;
    auto& h = handler.get();
    // An exception of this rank's own that leaves the scope (raised between
    // steps, an evaluation say) is its failure as a step's is: told to the
    // others (nothing when this worker failed already, or left the cluster
    // after its final commit and exit_fn raised), and the scope then exits
    // 3 as the contract says; before, Python's own exit code 1 ended it.
    if (!is_exit(exc_type)) h.report_left_by_exception(exception_line(exc_type, value));
    // The process ends below, before Python would print the traceback: the
    // one place that says where this rank's own exception came from (a
    // failing step logged one line, "ValueError: ...", and no file or line).
    // A peer's failure (PeerError) has its traceback on the peer.
    if (h.failed() && PyObject_IsInstance(value.ptr(), peer_error_type.ptr()) != 1) {
      py::module_::import("traceback").attr("print_exception")(exc_type, value, traceback);
      py::module_::import("sys").attr("stderr").attr("flush")();
    }
    try {
      auto guard = h.watch_preemption_scope();
      throw std::runtime_error("a Python exception left the scope");
    } catch (const std::runtime_error&) {
    }
    return false;
  }
};

// C-contiguous: the innermost dimension varies fastest, without gaps.
bool c_contiguous(const py::buffer_info& info) {
  auto expected = info.itemsize;
  for (auto dim = info.ndim - 1; dim >= 0; --dim) {
    if (info.shape[dim] > 1 && info.strides[dim] != expected) return false;
    expected *= info.shape[dim];
  }
  return true;
}

// The bytes of device memory described by __cuda_array_interface__ (version
// 2 or later: strides are None for C-contiguous data), the protocol PyTorch,
// CuPy and Numba share.
std::pair<void*, std::size_t> cuda_array(const std::string& name, const py::object& data) {
  if (!py::hasattr(data, "__cuda_array_interface__"))
    throw lifeboat::config_error("device buffer '" + name + "' has no __cuda_array_interface__");
  auto interface = data.attr("__cuda_array_interface__").cast<py::dict>();
  auto pointer = interface["data"].cast<py::tuple>();
  if (pointer[1].cast<bool>())
    throw lifeboat::config_error("device buffer '" + name + "' is read-only");
  if (interface.contains("strides") && !interface["strides"].is_none())
    throw lifeboat::config_error("device buffer '" + name + "' is not C-contiguous");
  // typestr is "<f4", "|u1", ...: the item size follows the kind.
  auto bytes =
      static_cast<std::size_t>(std::stoul(interface["typestr"].cast<std::string>().substr(2)));
  for (auto extent : interface["shape"].cast<py::tuple>()) bytes *= extent.cast<std::size_t>();
  return {reinterpret_cast<void*>(pointer[0].cast<std::uintptr_t>()), bytes};
}

}  // namespace

PYBIND11_MODULE(_lifeboat, m) {
  m.doc() = "lifeboat: preemption-aware checkpointing for synchronous distributed training";

  config_error_type =
      py::register_exception<lifeboat::config_error>(m, "ConfigError", PyExc_ValueError);
  static py::exception<lifeboat::peer_error> peer_error(m, "PeerError", PyExc_RuntimeError);
  peer_error_type = peer_error;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lifeboat::peer_error& e) {
      set_peer_error(e);
    }
  });

  py::class_<lifeboat::checkpoint_state>(m, "CheckpointState")
      .def(py::init<>())
      .def(
          "add_buffer",
          [](lifeboat::checkpoint_state& s, std::string name, py::buffer data) {
            auto info = data.request(true);
            if (!c_contiguous(info))
              throw lifeboat::config_error("buffer '" + name + "' is not C-contiguous");
            s.add_buffer(std::move(name), info.ptr,
                         static_cast<std::size_t>(info.size * info.itemsize));
          },
          py::arg("name"), py::arg("data"), py::keep_alive<1, 3>(),
          "Memory lifeboat saves and restores in place: a writable C-contiguous buffer "
          "(bytearray, array.array, a NumPy array), kept alive by the state.")
      .def(
          "add_device_buffer",
          [](lifeboat::checkpoint_state& s, std::string name, py::object data) {
            auto [pointer, bytes] = cuda_array(name, data);
            s.add_device_buffer(std::move(name), pointer, bytes);
          },
          py::arg("name"), py::arg("data"), py::keep_alive<1, 3>(),
          "Device memory lifeboat saves and restores in place: a writable C-contiguous object "
          "with __cuda_array_interface__ (a CUDA tensor), kept alive by the state. Raises "
          "ConfigError where device support is not compiled in or no device is present.")
      .def(
          "add_callbacks",
          [](lifeboat::checkpoint_state& s, std::string name, py::object save, py::object restore) {
            auto save_fn = callable_for("save", save);
            auto restore_fn = callable_for("restore", restore);
            // Called at a save, on the training thread inside run: what it
            // raises fails the step as the step's own exception would (one
            // line to the peers, the original exception raised here).
            auto saved = [save_fn, name] {
              py::gil_scoped_acquire gil;
              py::object result;
              try {
                result = save_fn.call<py::object>();
              } catch (py::error_already_set& e) {
                throw step_error{std::move(e)};
              }
              try {
                return result.cast<std::string>();
              } catch (const py::cast_error&) {
                throw lifeboat::config_error(
                    "checkpoint callbacks '" + name + "': save() returned a value of type " +
                    py::str(py::type::of(result).attr("__name__")).cast<std::string>() +
                    ", not bytes");
              }
            };
            s.add_callbacks(std::move(name), std::move(saved),
                            [restore_fn](const std::string& bytes) {
                              py::gil_scoped_acquire gil;
                              restore_fn(py::bytes(bytes));
                            });
          },
          py::arg("name"), py::arg("save"), py::arg("restore"),
          "State saved through callables: save() returns bytes, restore(bytes) takes them back.")
      .def(
          "add_check",
          [](lifeboat::checkpoint_state& s, py::object check) {
            auto fn = callable_for("check", check);
            s.add_check([fn] {
              py::gil_scoped_acquire gil;
              try {
                fn();
              } catch (py::error_already_set& e) {
                // The exception's own message: what() adds the traceback,
                // which the log line and the peers do not need.
                throw std::runtime_error(py::str(e.value()).cast<std::string>());
              }
            });
          },
          py::arg("check"),
          "A callable run before every save and before the restore: it raises when the "
          "registered memory no longer is the state's (moved or replaced by the framework); the "
          "save then fails, or the handler's construction raises ConfigError, with its message.");

  py::register_exception<lifeboat::checkpoint_error>(m, "CheckpointError", PyExc_RuntimeError);
  py::class_<lifeboat::restored_checkpoint>(m, "RestoredCheckpoint")
      .def_readonly("step", &lifeboat::restored_checkpoint::step)
      .def_readonly("total_run_calls", &lifeboat::restored_checkpoint::total_run_calls)
      .def_readonly("path", &lifeboat::restored_checkpoint::path)
      .def("__repr__", [](const lifeboat::restored_checkpoint& r) {
        return "RestoredCheckpoint(step=" + std::to_string(r.step) + ", path='" + r.path + "')";
      });
  m.def(
      "restore_checkpoint",
      [](lifeboat::checkpoint_state& state, const std::filesystem::path& dir, int rank,
         std::optional<int64_t> step) {
        py::gil_scoped_release unlocked;
        return lifeboat::restore_checkpoint(state, dir.string(), rank, step);
      },
      py::arg("state"), py::arg("checkpoint_dir"), py::arg("rank") = 0,
      py::arg("step") = py::none(),
      "Loads rank `rank`'s shard of the newest committed checkpoint in `checkpoint_dir` that "
      "verifies (or of `step` when given) into `state`, outside any job (no cluster, nothing "
      "written): for evaluation or "
      "export. `state` may register part of the job's state (a model without its optimizer). "
      "Returns a RestoredCheckpoint (step, total_run_calls, path), or None where the "
      "directory holds no committed checkpoint. Raises ConfigError when the directory is "
      "missing, the rank is none of the checkpoint's, or `state` registers a buffer the "
      "checkpoint lacks or holds in another size; "
      "CheckpointError when no committed checkpoint verifies, or `step`'s is not committed or "
      "does not verify.");
  py::class_<lifeboat::verified_checkpoint>(m, "VerifiedCheckpoint")
      .def_readonly("step", &lifeboat::verified_checkpoint::step)
      .def_readonly("total_run_calls", &lifeboat::verified_checkpoint::total_run_calls)
      .def_readonly("world_size", &lifeboat::verified_checkpoint::world_size)
      .def_readonly("bytes", &lifeboat::verified_checkpoint::bytes)
      .def_readonly("path", &lifeboat::verified_checkpoint::path)
      .def("__repr__", [](const lifeboat::verified_checkpoint& v) {
        return "VerifiedCheckpoint(step=" + std::to_string(v.step) +
               ", world_size=" + std::to_string(v.world_size) +
               ", bytes=" + std::to_string(v.bytes) + ", path='" + v.path + "')";
      });
  m.def(
      "verify_checkpoint",
      [](const std::filesystem::path& dir, std::optional<int64_t> step) {
        py::gil_scoped_release unlocked;
        return lifeboat::verify_checkpoint(dir.string(), step);
      },
      py::arg("checkpoint_dir"), py::arg("step") = py::none(),
      "Checks every rank's shard of the newest committed checkpoint in `checkpoint_dir` (or of "
      "`step`) as each rank's restore would, every byte against its checksums, keeping none: "
      "before a checkpoint is copied, archived or exported. Beside a running job whose retention "
      "removes the newest during the check, the newest committed since is checked. Writes "
      "nothing. Returns a "
      "VerifiedCheckpoint (step, total_run_calls, world_size, bytes, path). Raises "
      "ConfigError when the directory is missing; CheckpointError when it holds no committed "
      "checkpoint (of `step`) or the checkpoint does not verify, naming the file and chunk.");
  m.def(
      "committed_steps",
      [](const std::filesystem::path& dir) { return lifeboat::committed_steps(dir.string()); },
      py::arg("checkpoint_dir"),
      "The steps of the committed checkpoints in `checkpoint_dir`, oldest first. Raises "
      "ConfigError when the directory does not exist.");

  py::class_<lifeboat::termination_config>(m, "TerminationConfig")
      .def(py::init(&make_config), py::arg("termination_watcher_fn") = py::none(),
           py::arg("exit_fn") = py::none(), py::arg("grace_period") = py::none(),
           py::arg("save_fn") = py::none(),
           py::arg("signals") = std::vector<std::string>{"SIGTERM"},
           py::arg("notice_sources") = py::none(), py::arg("restart_code") = py::none(),
           py::arg("poll_interval") = 1.0, py::arg("safety_factor") = 2.0,
           py::arg("max_to_keep") = 2, py::arg("save_every_steps") = 0,
           py::arg("save_every_seconds") = 0.0, py::arg("heartbeat_timeout") = 10.0,
           py::arg("hang_timeout") = py::none(),
           "Durations in seconds; anything left unset takes the platform's default.");

  py::class_<preemption_scope>(m, "PreemptionScope")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](preemption_scope& s, py::object exc_type, py::object value,
                          py::object traceback) { return s.exit(exc_type, value, traceback); });

  py::class_<python_handler> handler_class(m, "PreemptionCheckpointHandler");
  handler_class
      // A checkpoint directory is a str, bytes or os.PathLike (pathlib.Path,
      // the norm in trainers' configurations), as Python's own file APIs take.
      .def(py::init<lifeboat::checkpoint_state&, const std::filesystem::path&,
                    lifeboat::termination_config>(),
           py::arg("state"), py::arg("checkpoint_dir"),
           py::arg("config") = lifeboat::termination_config{}, py::keep_alive<1, 2>(),
           "Joins the cluster (from the environment) and restores the latest complete "
           "checkpoint into `state`.")
      .def("save_checkpoint_if_preempted",
           [](python_handler& h) { h.get().save_checkpoint_if_preempted(); })
      .def(
          "step_completed", [](python_handler& h, int64_t step) { h.get().step_completed(step); },
          py::arg("step"))
      .def_property_readonly("total_run_calls",
                             [](python_handler& h) { return h.read().total_run_calls; })
      .def_property_readonly("rank", [](python_handler& h) { return h.read().rank; })
      .def_property_readonly("world_size", [](python_handler& h) { return h.read().world_size; })
      .def(
          "barrier",
          [](python_handler& h, const std::string& name, double timeout) {
            auto& handler = h.get();
            // Checked before the GIL is released: the error formats the
            // value with Python, which without the GIL crashed the process.
            auto bound = from_seconds<std::chrono::milliseconds>(timeout, "timeout");
            if (bound.count() < 0)
              throw lifeboat::config_error("timeout must be >= 0 seconds, got " +
                                           py::str(py::float_(timeout)).cast<std::string>());
            py::gil_scoped_release unlocked;
            handler.barrier(name, bound);
          },
          py::arg("name"), py::arg("timeout"))
      .def(
          "report_error",
          [](python_handler& h, const std::string& message) {
            h.get().report_error(std::make_exception_ptr(std::runtime_error(message)));
          },
          py::arg("message"))
      .def(
          "watch_preemption_scope", [](python_handler& h) { return preemption_scope{h}; },
          py::keep_alive<0, 1>(),
          "Use with `with`: leaving the block by an exception while a worker failed ends the "
          "process with the failure code.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](python_handler& h, py::object exc_type, py::object exc, py::object) {
             if (exc_type.is_none())
               h.close();
             else
               h.leave_by_exception(exc_type, exc);
             return false;
           })
      .def("close", &python_handler::close);
  // run is a CPython method of its own (run_step), not a pybind11 def: the
  // per-step path skips pybind11's dispatch and argument packing.
  static PyMethodDef run_method{
      "run", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&run_step)),
      METH_FASTCALL | METH_KEYWORDS,
      "run(fn, *args, **kwargs)\n--\n\nRuns one training step fn(*args, **kwargs) and returns "
      "its result; an exception from it is reported to every worker and re-raised."};
  auto run = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(handler_class.ptr()), &run_method));
  if (!run) throw py::error_already_set();
  handler_class.attr("run") = run;
}
