// Noticing that an HTTP client went away while its request runs. The HTTP
// library hands a handler no socket, so the watch finds the connection's
// socket among the process's descriptors by its two endpoints, and asks the
// kernel whether the peer has closed it (POLLRDHUP, Linux).
#pragma once

#include <string>

namespace quill::serve {

class PeerWatch {
public:
  /// The connection from remoteAddr:remotePort to our localPort.
  PeerWatch(const std::string &remoteAddr, int remotePort, int localPort);
  /// Whether the client has closed its end (or the socket is gone). False
  /// when the socket could not be found: then nothing is known.
  bool closed();

private:
  /// Whether `fd` is still the socket of this connection.
  bool matches(int fd) const;

  std::string remoteAddr_;
  int remotePort_, localPort_;
  int fd_ = -1;
};

} // namespace quill::serve
