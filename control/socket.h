// The control socket: a Unix stream socket, owner-only, one request line per connection and one
// reply ("OK" or "ERROR" on the first line, then the body), then the server closes.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dscpgw {

class ControlServer {
  public:
    // Creates the socket's directory (mode 0700) when missing and the socket (mode 0600). Refuses
    // a path where a gateway already answers; replaces a stale socket file. Throws
    // std::runtime_error saying what is wrong.
    explicit ControlServer(const std::string& path);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // Serves clients for `timeout_ms`, then returns, whatever the clients do. Clients are read
    // without blocking, each must send its whole request line within kRequestDeadline, and at
    // most kMaxClients wait at once (a new one drops the oldest), so no client can delay another
    // or the control thread's periodic work. `handle` gets the request line and returns the
    // body; it sets `ok` false for an error reply.
    void serve(int timeout_ms, const std::function<std::string(const std::string&, bool&)>& handle);
    const std::string& path() const { return path_; }

    static constexpr size_t kMaxClients = 32;
    static constexpr std::chrono::milliseconds kRequestDeadline{1000};

  private:
    struct Pending {
        int fd;
        std::chrono::steady_clock::time_point deadline;
        std::string request;
    };
    std::string path_;
    int fd_ = -1;
    std::vector<Pending> pending_;
};

// Client side: sends `request`, returns 0 with the reply body in `body` (error replies: 1, with
// the body as the message), or 1 with `body` saying why no reply came (no gateway, refused,
// permission).
int control_request(const std::string& path, const std::string& request, std::string& body);

}  // namespace dscpgw
