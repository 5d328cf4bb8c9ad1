#include "control/socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dscpgw {

namespace {

constexpr size_t kMaxRequest = 4096;

sockaddr_un address(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof a.sun_path)
        throw std::runtime_error("control socket path too long: " + path);
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    return a;
}

void set_timeouts(int fd, int seconds) {
    timeval tv{seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool write_all(int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
        const ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

ControlServer::ControlServer(const std::string& path) : path_(path) {
    const sockaddr_un a = address(path);
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash != 0) {
        const std::string dir = path.substr(0, slash);
        struct stat st {};
        if (stat(dir.c_str(), &st) != 0) {
            if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
                throw std::runtime_error(
                    sys_error("cannot create control socket directory " + dir) +
                    " (set [control] socket to a path this user can create)");
        } else if (!S_ISDIR(st.st_mode)) {
            throw std::runtime_error("control socket directory " + dir + " is not a directory");
        }
    }
    // Someone answering there is a running gateway: never take its socket away.
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
        const bool alive = ::connect(probe, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
        ::close(probe);
        if (alive)
            throw std::runtime_error("another gateway is already listening on " + path +
                                     " (set [control] socket to run a second one)");
    }
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            throw std::runtime_error(path + " exists and is not a socket; not replacing it");
        ::unlink(path.c_str());  // Stale: left by a gateway that did not exit cleanly.
    }
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) throw std::runtime_error(sys_error("cannot create the control socket"));
    const mode_t old = umask(0177);  // Owner-only from the moment it exists.
    const int rc = ::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    umask(old);
    if (rc != 0 || chmod(path.c_str(), 0600) != 0 || ::listen(fd_, 16) != 0) {
        const std::string e = sys_error("cannot listen on control socket " + path) +
                              " (set [control] socket to a path this user can create)";
        ::close(fd_);
        fd_ = -1;
        throw std::runtime_error(e);
    }
}

ControlServer::~ControlServer() {
    for (const Pending& c : pending_) ::close(c.fd);
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(path_.c_str());
    }
}

void ControlServer::serve(int timeout_ms,
                          const std::function<std::string(const std::string&, bool&)>& handle) {
    using Clock = std::chrono::steady_clock;
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        // Wait for the listening socket and every pending client, at most until the nearest
        // client deadline or the caller's timeout.
        auto wake = until;
        for (const Pending& c : pending_) wake = std::min(wake, c.deadline);
        std::vector<pollfd> fds{{fd_, POLLIN, 0}};
        for (const Pending& c : pending_) fds.push_back({c.fd, POLLIN, 0});
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now()).count();
        const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(left, 0)));
        const auto now = Clock::now();
        if (n > 0 && (fds[0].revents & POLLIN) != 0) {
            for (int c;
                 (c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
                if (pending_.size() >= kMaxClients) {
                    // Full: the client waiting longest makes room (it had most of its second).
                    ::close(pending_.front().fd);
                    pending_.erase(pending_.begin());
                }
                pending_.push_back({c, now + kRequestDeadline, {}});
            }
        }
        for (size_t i = 0; i < pending_.size();) {
            Pending& c = pending_[i];
            bool done = false;
            char buf[512];
            for (;;) {
                const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
                if (r > 0) {
                    c.request.append(buf, static_cast<size_t>(r));
                    if (c.request.find('\n') != std::string::npos ||
                        c.request.size() >= kMaxRequest)
                        break;
                    continue;
                }
                if (r < 0 && errno == EINTR) continue;
                done = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);  // Closed, or failed.
                break;
            }
            const size_t nl = c.request.find('\n');
            if (nl != std::string::npos || c.request.size() >= kMaxRequest) {
                bool ok = true;
                std::string body;
                if (nl == std::string::npos) {
                    ok = false;
                    body = "request too long\n";
                } else {
                    body = handle(c.request.substr(0, nl), ok);
                }
                // The reply is written blocking, bounded by a send timeout.
                ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) & ~O_NONBLOCK);
                set_timeouts(c.fd, 2);
                write_all(c.fd, (ok ? "OK\n" : "ERROR\n") + body);
                done = true;
            } else if (now >= c.deadline) {
                done = true;  // No whole request within its deadline: dropped, nothing answered.
            }
            if (done) {
                ::close(c.fd);
                pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
            } else {
                ++i;
            }
        }
        if (Clock::now() >= until) return;
    }
}

int control_request(const std::string& path, const std::string& request, std::string& body) {
    sockaddr_un a{};
    try {
        a = address(path);
    } catch (const std::exception& e) {
        body = e.what();
        return 1;
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        body = sys_error("socket");
        return 1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
        const int e = errno;
        ::close(fd);
        if (e == ENOENT)
            body = "no gateway is running: " + path + " does not exist";
        else if (e == ECONNREFUSED)
            body = path + " refuses connections: the gateway that made it is not running";
        else if (e == EACCES || e == EPERM)
            body = "permission denied on " + path +
                   ": the socket is owner-only; run as the gateway's user";
        else
            body = "cannot connect to " + path + ": " + std::strerror(e);
        return 1;
    }
    set_timeouts(fd, 30);  // A reload compiles a whole config; allow it time.
    if (!write_all(fd, request + "\n")) {
        body = sys_error("cannot send the request");
        ::close(fd);
        return 1;
    }
    std::string reply;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        reply.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    const size_t nl = reply.find('\n');
    if (nl == std::string::npos) {
        body = "the gateway closed the connection without a reply";
        return 1;
    }
    const std::string head = reply.substr(0, nl);
    body = reply.substr(nl + 1);
    return head == "OK" ? 0 : 1;
}

}  // namespace dscpgw
