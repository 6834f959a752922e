// Finding a connection's socket by its endpoints, and polling it.
#include "PeerWatch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>

namespace quill::serve {

namespace {

/// The numeric address and port of a socket's peer (or own end).
bool endpoint(int fd, bool peer, std::string &addr, int &port) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  auto *sa = reinterpret_cast<sockaddr *>(&storage);
  if ((peer ? getpeername(fd, sa, &length) : getsockname(fd, sa, &length)) != 0)
    return false;
  char text[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET) {
    auto *in = reinterpret_cast<sockaddr_in *>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (storage.ss_family == AF_INET6) {
    auto *in = reinterpret_cast<sockaddr_in6 *>(&storage);
    inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
    port = ntohs(in->sin6_port);
  } else {
    return false;
  }
  addr = text;
  return true;
}

} // namespace

PeerWatch::PeerWatch(const std::string &remoteAddr, int remotePort, int localPort)
    : remoteAddr_(remoteAddr), remotePort_(remotePort), localPort_(localPort) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return;
  while (dirent *entry = readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0')
      continue;
    if (matches(int(fd))) {
      fd_ = int(fd);
      break;
    }
  }
  closedir(dir);
}

bool PeerWatch::matches(int fd) const {
  std::string addr, local;
  int port = -1, ownPort = -1;
  return endpoint(fd, /*peer=*/true, addr, port) && port == remotePort_ && addr == remoteAddr_ &&
         endpoint(fd, /*peer=*/false, local, ownPort) && ownPort == localPort_;
}

bool PeerWatch::closed() {
  if (fd_ < 0)
    return false;
  // The descriptor may have been closed and reused by another connection.
  if (!matches(fd_))
    return true;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0)
    return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

} // namespace quill::serve
