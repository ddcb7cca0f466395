# Compiler warnings (as errors) and sanitizers, applied to every target of the project.
add_compile_options(-Wall -Wextra -Werror)

# ccache where it is installed: a second configuration or a rebuild after a
# small change recompiles only what changed (install-deps installs it).
find_program(LIFEBOAT_CCACHE ccache)
if(LIFEBOAT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${LIFEBOAT_CCACHE}")
endif()

set(LIFEBOAT_SANITIZE_SUMMARY "none")
if(LIFEBOAT_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${LIFEBOAT_SANITIZE}")
  foreach(_s IN LISTS _sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "LIFEBOAT_SANITIZE: unknown sanitizer '${_s}' (address, undefined, thread, leak)")
    endif()
  endforeach()
  if("thread" IN_LIST _sanitizers AND "address" IN_LIST _sanitizers)
    message(FATAL_ERROR "LIFEBOAT_SANITIZE: 'thread' cannot be combined with 'address'")
  endif()
  set(_flags -fsanitize=${LIFEBOAT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_compile_options(${_flags})
  add_link_options(${_flags})
  # -O1, the level the sanitizers are documented with, and line tables only
  # (enough for symbolized reports): the sanitized build is a third of `make
  # test`'s time on two cores, and these cut its compile time by about 30%.
  add_compile_options(-O1 -g1)
  # Boost.Asio (in the status endpoint and the metadata clients) uses
  # std::atomic_thread_fence, which GCC warns ThreadSanitizer cannot see; the
  # warning is about Boost's headers, not a race in our code.
  if("thread" IN_LIST _sanitizers AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
    # Protobuf's headers add members to MapFieldBase under __SANITIZE_THREAD__,
    # so code built with it disagrees with Debian's libprotobuf about the
    # layout (and crashes in Map::find). Hide the macro; keep libstdc++'s
    # TSan annotations, which hang off the same macro.
    add_compile_options(-U__SANITIZE_THREAD__ -D_GLIBCXX_TSAN=1)
  endif()
  add_compile_definitions(LIFEBOAT_SANITIZED=1)
  set(LIFEBOAT_SANITIZE_SUMMARY "${LIFEBOAT_SANITIZE}")
endif()

# libFuzzer (make fuzz): coverage instrumentation plus AddressSanitizer and
# UndefinedBehaviorSanitizer on every object; the fuzz targets link the
# libFuzzer runtime (-fsanitize=fuzzer) themselves.
if(LIFEBOAT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LIFEBOAT_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++)")
  endif()
  if(LIFEBOAT_SANITIZE)
    message(FATAL_ERROR "LIFEBOAT_FUZZ brings its own sanitizers; leave LIFEBOAT_SANITIZE empty")
  endif()
  set(LIFEBOAT_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                               -fno-omit-frame-pointer)
  add_compile_options(-fsanitize=fuzzer-no-link ${LIFEBOAT_FUZZ_SANITIZERS} -O1 -g1)
  add_link_options(${LIFEBOAT_FUZZ_SANITIZERS})
  add_compile_definitions(LIFEBOAT_SANITIZED=1)
endif()
