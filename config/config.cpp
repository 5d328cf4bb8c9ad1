#include "config/config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <tuple>

#include "dataplane/neighbor.h"

namespace dscpgw {

namespace {

// The sections of a config file; the classes-only loader accepts the same ones.
constexpr std::string_view kTopLevelKeys[] = {"eal",      "gateway",   "ports",   "tunnels",
                                              "classes",  "neighbors", "metrics", "control",
                                              "policers", "queues"};

// Collects problems with their source positions; throws them all at the end.
class Checker {
  public:
    explicit Checker(std::string file) : file_(std::move(file)) {}

    void error(const toml::source_region& where, const std::string& key, const std::string& what) {
        std::ostringstream os;
        os << file_ << ':' << where.begin.line << ':' << where.begin.column << ": " << key << ": "
           << what;
        errors_.push_back(os.str());
        failed_.insert(key);
    }
    // Whether `key` already has an error: checks that build on its value are skipped, so that a
    // mistake is reported once and never as a default the user did not write.
    bool failed(const std::string& key) const { return failed_.count(key) != 0; }

    // Not an error: the config loads, and `check` and the gateway's log say it.
    void warn(const toml::source_region& where, const std::string& key, const std::string& what) {
        std::ostringstream os;
        os << file_ << ':' << where.begin.line << ':' << where.begin.column << ": warning: " << key
           << ": " << what;
        warnings_.push_back(os.str());
    }
    std::vector<std::string> take_warnings() { return std::move(warnings_); }

    void finish() const {
        if (errors_.empty()) return;
        std::string all;
        for (const auto& e : errors_) all += e + '\n';
        all.pop_back();
        throw ConfigError(all);
    }

    // Reports keys of `t` not in `allowed`.
    void only_keys(const toml::table& t, const std::string& path,
                   std::initializer_list<std::string_view> allowed) {
        only_keys(t, path, std::span<const std::string_view>(allowed.begin(), allowed.size()));
    }
    void only_keys(const toml::table& t, const std::string& path,
                   std::span<const std::string_view> allowed) {
        for (const auto& [k, v] : t) {
            bool ok = false;
            for (auto a : allowed) ok = ok || k.str() == a;
            if (!ok) error(v.source(), join(path, k.str()), "unknown key");
        }
    }

    static std::string join(const std::string& path, std::string_view key) {
        return path.empty() ? std::string(key) : path + "." + std::string(key);
    }

    std::optional<std::string> str(const toml::table& t, const std::string& path,
                                   std::string_view key, bool required) {
        const toml::node* n = t.get(key);
        if (n == nullptr) {
            if (required) error(t.source(), join(path, key), "missing (required)");
            return std::nullopt;
        }
        if (!n->is_string()) {
            error(n->source(), join(path, key), "expected a string");
            return std::nullopt;
        }
        return std::string(n->as_string()->get());
    }

    std::optional<bool> boolean(const toml::table& t, const std::string& path,
                                std::string_view key) {
        const toml::node* n = t.get(key);
        if (n == nullptr) return std::nullopt;
        if (!n->is_boolean()) {
            error(n->source(), join(path, key), "expected true or false");
            return std::nullopt;
        }
        return n->as_boolean()->get();
    }

    // One of `words` (the index of the one given), or nullopt when absent or wrong (said).
    std::optional<size_t> word(const toml::table& t, const std::string& path, std::string_view key,
                               std::initializer_list<std::string_view> words) {
        auto s = str(t, path, key, false);
        if (!s) return std::nullopt;
        std::string expect;
        size_t i = 0;
        for (std::string_view w : words) {
            if (*s == w) return i;
            expect.append(i++ == 0 ? "\"" : " or \"").append(w).append("\"");
        }
        error(t.get(key)->source(), join(path, key),
              std::string("\"").append(*s).append("\" is not valid; expected ").append(expect));
        return std::nullopt;
    }

    std::optional<int64_t> integer(const toml::table& t, const std::string& path,
                                   std::string_view key, int64_t lo, int64_t hi, bool required) {
        const toml::node* n = t.get(key);
        if (n == nullptr) {
            if (required) error(t.source(), join(path, key), "missing (required)");
            return std::nullopt;
        }
        return integer_node(*n, join(path, key), lo, hi);
    }

    std::optional<int64_t> integer_node(const toml::node& n, const std::string& key, int64_t lo,
                                        int64_t hi) {
        if (!n.is_integer()) {
            error(n.source(), key,
                  "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi));
            return std::nullopt;
        }
        const int64_t v = n.as_integer()->get();
        if (v < lo || v > hi) {
            error(n.source(), key,
                  std::to_string(v) + " is out of range " + std::to_string(lo) + ".." +
                      std::to_string(hi));
            return std::nullopt;
        }
        return v;
    }

    // An integer in lo..hi or one of the given words; words map to the negative codes given.
    std::optional<int64_t> int_or_word(
        const toml::table& t, const std::string& path, std::string_view key, int64_t lo, int64_t hi,
        std::initializer_list<std::pair<std::string_view, int64_t>> words) {
        const toml::node* n = t.get(key);
        if (n == nullptr) return std::nullopt;
        std::string expect = std::to_string(lo) + ".." + std::to_string(hi);
        for (auto& w : words) expect += " or \"" + std::string(w.first) + "\"";
        if (n->is_string()) {
            for (auto& w : words)
                if (n->as_string()->get() == w.first) return w.second;
            error(n->source(), join(path, key),
                  "\"" + n->as_string()->get() + "\" is not valid; expected " + expect);
            return std::nullopt;
        }
        if (!n->is_integer()) {
            error(n->source(), join(path, key), "expected " + expect);
            return std::nullopt;
        }
        return integer_node(*n, join(path, key), lo, hi);
    }

    // A string or an array of strings.
    std::vector<std::pair<std::string, toml::source_region>> strings(const toml::table& t,
                                                                     const std::string& path,
                                                                     std::string_view key) {
        std::vector<std::pair<std::string, toml::source_region>> out;
        const toml::node* n = t.get(key);
        if (n == nullptr) return out;
        if (n->is_string()) {
            out.emplace_back(n->as_string()->get(), n->source());
            return out;
        }
        if (!n->is_array()) {
            error(n->source(), join(path, key), "expected a string or an array of strings");
            return out;
        }
        size_t i = 0;
        for (const toml::node& e : *n->as_array()) {
            if (!e.is_string())
                error(e.source(), join(path, key) + "[" + std::to_string(i) + "]",
                      "expected a string");
            else
                out.emplace_back(e.as_string()->get(), e.source());
            ++i;
        }
        return out;
    }

    const std::string& file() const { return file_; }

  private:
    std::string file_;
    std::vector<std::string> errors_, warnings_;
    std::set<std::string> failed_;
};

// The LEN of ADDRESS/LEN: decimal, 0..max.
std::optional<unsigned> parse_prefix_length(std::string_view s, unsigned max) {
    const std::string z(s);
    char* end = nullptr;
    const unsigned long len = std::strtoul(z.c_str(), &end, 10);
    if (z.empty() || *end != '\0' || len > max) return std::nullopt;
    return static_cast<unsigned>(len);
}

// A rate or size as the config writes it: an integer (bits per second, bytes), or a string of a
// decimal number, an optional SI prefix (k/K, M, G, T: powers of 1000; Ki, Mi, Gi: of 1024) and a
// unit: "bps", "bit", "bit/s", "b/s" for rates, "B" for sizes (or none). "%": a share, 0 < x ≤ 100.
struct Quantity {
    double value = 0;
    bool percent = false;
};

std::optional<Quantity> parse_quantity(std::string_view s, bool rate, std::string& why) {
    const auto fail = [&](const std::string& w) -> std::optional<Quantity> {
        why = "\"" + std::string(s) + "\" " + w;
        return std::nullopt;
    };
    size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == 0) return fail("does not start with a number");
    const std::string num(s.substr(0, i));
    if (std::count(num.begin(), num.end(), '.') > 1 || num.front() == '.' || num.back() == '.')
        return fail("is not a number");
    double v = std::stod(num);
    std::string_view rest = s.substr(i);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest == "%") {
        if (v <= 0 || v > 100) return fail("is not a share in 0..100%");
        return Quantity{v, true};
    }
    double mult = 1;
    if (!rest.empty()) {
        const char p = rest.front();
        const bool bin = rest.size() >= 2 && rest[1] == 'i';
        double base = 0;
        if (p == 'k' || p == 'K') base = 1;
        if (p == 'M') base = 2;
        if (p == 'G') base = 3;
        if (p == 'T' && !bin) base = 4;
        if (base != 0) {
            mult = std::pow(bin ? 1024.0 : 1000.0, base);
            rest.remove_prefix(bin ? 2 : 1);
        }
    }
    if (rate) {
        if (!(rest.empty() || rest == "bps" || rest == "bit" || rest == "bit/s" || rest == "b/s"))
            return fail("is not a rate: expected bits per second, e.g. \"10Gbps\", \"800M\"");
    } else if (!(rest.empty() || rest == "B")) {
        return fail("is not a size: expected bytes, e.g. \"64KB\", \"1MiB\", \"1500\"");
    }
    v *= mult;
    if (v < 1 || v > 1e15) return fail(rate ? "is out of range 1bps..1Pbps" : "is out of range");
    return Quantity{v, false};
}

// A config value that is a rate or a size: integer or string. Sets `q`; false after an error.
bool quantity_node(Checker& c, const toml::node& n, const std::string& key, bool rate,
                   bool percent_ok, Quantity& q) {
    if (n.is_integer()) {
        const int64_t v = n.as_integer()->get();
        if (v < 1) {
            c.error(n.source(), key, std::to_string(v) + " is out of range: it must be positive");
            return false;
        }
        q = Quantity{static_cast<double>(v), false};
        return true;
    }
    if (!n.is_string()) {
        c.error(n.source(), key,
                rate ? "expected a rate: bits per second, or a string such as \"10Gbps\""
                     : "expected a size: bytes, or a string such as \"64KB\"");
        return false;
    }
    std::string why;
    auto p = parse_quantity(n.as_string()->get(), rate, why);
    if (p && p->percent && !percent_ok) {
        why = "\"" + n.as_string()->get() + "\": a share (%) is not valid here";
        p.reset();
    }
    if (!p) {
        c.error(n.source(), key, why);
        return false;
    }
    q = *p;
    return true;
}

// The `N = value` entries of a DSCP-keyed table (outer_dscp's map, dscp_to_pcp): each key 0..63
// once (`default`, if `default_ok`, is left to the caller), each value 0..hi. Calls put(key,
// value).
template <typename Put>
void dscp_keyed_table(Checker& c, const toml::table& mt, const std::string& mpath, int64_t hi,
                      bool default_ok, Put&& put) {
    uint64_t seen = 0;
    for (const auto& [k, v] : mt) {
        const std::string kpath = mpath + "." + std::string(k.str());
        const std::string_view ks = k.str();
        if (default_ok && ks == "default") continue;
        int dscp = -1;
        if (!ks.empty() && ks.size() <= 2 &&
            std::all_of(ks.begin(), ks.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
            dscp = std::stoi(std::string(ks));
        if (dscp < 0 || dscp > 63) {
            c.error(v.source(), kpath,
                    "map keys are DSCP values 0..63; \"" + std::string(ks) + "\" is not one");
            continue;
        }
        if (!v.is_integer()) {
            c.error(v.source(), kpath, "expected an integer 0.." + std::to_string(hi));
            continue;
        }
        const int64_t out = v.as_integer()->get();
        if (out < 0 || out > hi) {
            c.error(v.source(), kpath,
                    std::to_string(out) + " is out of range 0.." + std::to_string(hi));
            continue;
        }
        if ((seen >> dscp & 1) != 0) {
            c.error(v.source(), kpath, "DSCP " + std::to_string(dscp) + " is mapped twice");
            continue;
        }
        seen |= uint64_t{1} << dscp;
        put(dscp, static_cast<uint8_t>(out));
    }
}

bool parse_ip(std::string_view s, uint8_t& family, std::array<uint8_t, 16>& out) {
    std::string z(s);
    out = {};
    if (inet_pton(AF_INET, z.c_str(), out.data()) == 1) {
        family = 4;
        return true;
    }
    if (inet_pton(AF_INET6, z.c_str(), out.data()) == 1) {
        family = 6;
        return true;
    }
    return false;
}

// [metrics] listen: "HOST:PORT" with an IPv4 address, "[IPv6]:PORT", or "*:PORT"/":PORT" for every
// address; PORT 1..65535.
bool valid_listen(const std::string& s, std::string& why) {
    why = "expected \"ADDRESS:PORT\" (such as \"127.0.0.1:9550\", \"[::1]:9550\" or \"*:9550\")";
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos) return false;
    const std::string host = s.substr(0, colon), port = s.substr(colon + 1);
    char* end = nullptr;
    const unsigned long pn = std::strtoul(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || pn == 0 || pn > 65535) return false;
    if (host.empty() || host == "*") return true;
    std::array<uint8_t, 16> a{};
    if (host.front() == '[' && host.back() == ']')
        return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), a.data()) == 1;
    return inet_pton(AF_INET, host.c_str(), a.data()) == 1;
}

const toml::table* table_at(Checker& c, const toml::node& n, const std::string& path) {
    if (!n.is_table()) {
        c.error(n.source(), path, "expected a table");
        return nullptr;
    }
    return n.as_table();
}

// A tunnel's `outer_dscp`: "inherit" (default), a fixed 0..63, or a table
// `{ map = { 26 = 46, 48 = 48 }, default = "inherit" | N }` (the map's keys 0..63, each once, and
// its values 0..63). Fills the tunnel's 64-entry outer_map the encapsulation reads.
void outer_dscp_policy(Checker& c, const toml::table& t, const std::string& path, TunnelConf& tc) {
    tc.outer_map = identity_dscp_map();
    tc.outer_map_keys = 0;
    tc.outer_dscp = kDscpInherit;
    const toml::node* n = t.get("outer_dscp");
    if (n == nullptr) return;
    const std::string key = path + ".outer_dscp";
    if (!n->is_table()) {
        const int64_t v = c.int_or_word(t, path, "outer_dscp", 0, 63, {{"inherit", kDscpInherit}})
                              .value_or(kDscpInherit);
        tc.outer_dscp = static_cast<int16_t>(v);
        if (v >= 0) tc.outer_map.fill(static_cast<uint8_t>(v));
        return;
    }
    const toml::table& pt = *n->as_table();
    c.only_keys(pt, key, {"map", "default"});
    tc.outer_dscp = kDscpMapped;
    if (auto d = c.int_or_word(pt, key, "default", 0, 63, {{"inherit", kDscpInherit}});
        d && *d >= 0)
        tc.outer_map.fill(static_cast<uint8_t>(*d));
    const toml::node* m = pt.get("map");
    if (m == nullptr) {
        c.error(pt.source(), key,
                "a table needs `map` (DSCP = outer DSCP); or use \"inherit\" or N");
        return;
    }
    const std::string mpath = key + ".map";
    const toml::table* mt = table_at(c, *m, mpath);
    if (mt == nullptr) return;
    dscp_keyed_table(c, *mt, mpath, 63, false, [&](int dscp, uint8_t out) {
        tc.outer_map[static_cast<size_t>(dscp)] = out;
        tc.outer_map_keys |= uint64_t{1} << dscp;
    });
}

// A name as every interface shows it: 1-63 characters of [A-Za-z0-9_.-], unique in its list also
// once sanitised for DPDK telemetry (which allows only [A-Za-z0-9_], so "a-b" and "a_b" would
// collide). Returns the name, or "" after an error.
std::string checked_name(Checker& c, const toml::table& t, const std::string& path,
                         std::set<std::string>& names, std::set<std::string>& sanitised,
                         const char* kind) {
    auto name = c.str(t, path, "name", true);
    if (!name) return "";
    const auto where = t.get("name")->source();
    const bool chars_ok = std::all_of(name->begin(), name->end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-';
    });
    if (name->empty() || name->size() > kMaxNameLen || !chars_ok) {
        std::string shown = name->substr(0, 40);
        for (char& ch : shown)
            if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
        c.error(where, path + ".name",
                "\"" + shown + (name->size() > 40 ? "...\"" : "\"") + " is not a valid " + kind +
                    " name: 1-" + std::to_string(kMaxNameLen) +
                    " characters of letters, digits, '_', '.' and '-'");
        return "";
    }
    if (!names.insert(*name).second) {
        c.error(where, path + ".name",
                "duplicate " + std::string(kind) + " name \"" + *name + "\"");
        return "";
    }
    std::string tel = *name;
    for (char& ch : tel)
        if (ch == '.' || ch == '-') ch = '_';
    if (!sanitised.insert(tel).second) {
        c.error(where, path + ".name",
                std::string(kind) + " name \"" + *name + "\" shows as \"" + tel +
                    "\" in DPDK telemetry, like another " + kind + "'s; rename one");
        return "";
    }
    return *name;
}

// Why `mac` cannot be a station's MAC (broadcast, multicast, all zero), or nullptr.
const char* bad_station_mac(const std::array<uint8_t, 6>& mac) {
    if (std::all_of(mac.begin(), mac.end(), [](uint8_t b) { return b == 0; })) return "is all zero";
    if ((mac[0] & 1) != 0) return "is a broadcast or multicast (group) MAC";
    return nullptr;
}

// Why `a` (family `fam`) cannot be a unicast host on the underlay or a LAN, or nullptr.
const char* bad_host_ip(uint8_t fam, const std::array<uint8_t, 16>& a) {
    if (fam == 4) {
        if (a[0] == 0) return "is in 0.0.0.0/8 (this network)";
        if (a[0] == 127) return "is a loopback address";
        if (a[0] >= 224 && a[0] < 240) return "is a multicast address";
        if (a[0] >= 240) return "is reserved or the limited broadcast address";
        return nullptr;
    }
    static constexpr std::array<uint8_t, 16> kZero{};
    if (a == kZero) return "is the unspecified address";
    if (std::equal(a.begin(), a.begin() + 15, kZero.begin()) && a[15] == 1)
        return "is the loopback address";
    if (a[0] == 0xff) return "is a multicast address";
    if (std::equal(a.begin(), a.begin() + 10, kZero.begin()) && a[10] == 0xff && a[11] == 0xff)
        return "is an IPv4-mapped address: use the IPv4 address";
    return nullptr;
}

// Parses `key` as a station MAC; false after an error.
bool station_mac(Checker& c, const toml::table& t, const std::string& path, const char* key,
                 bool required, std::array<uint8_t, 6>& mac) {
    auto s = c.str(t, path, key, required);
    if (!s) return false;
    if (!parse_mac(*s, mac)) {
        c.error(t.get(key)->source(), path + "." + key,
                "\"" + *s + "\" is not a MAC address (expected xx:xx:xx:xx:xx:xx)");
        return false;
    }
    if (const char* why = bad_station_mac(mac)) {
        c.error(t.get(key)->source(), path + "." + key,
                "\"" + *s + "\" " + why + ": no frame may be sent to it");
        return false;
    }
    return true;
}

// Parses `key` as a unicast host address; false after an error.
bool host_ip(Checker& c, const toml::table& t, const std::string& path, const char* key,
             bool required, uint8_t& fam, std::array<uint8_t, 16>& a) {
    auto s = c.str(t, path, key, required);
    if (!s) return false;
    if (!parse_ip(*s, fam, a)) {
        c.error(t.get(key)->source(), path + "." + key, "\"" + *s + "\" is not an IP address");
        return false;
    }
    if (const char* why = bad_host_ip(fam, a)) {
        c.error(t.get(key)->source(), path + "." + key,
                "\"" + *s + "\" " + why + ": it cannot be a host");
        return false;
    }
    return true;
}

// A shaper's `burst` (bytes): given, or 10 µs of `rate`, and at least one frame of `mtu`.
uint64_t shaper_burst(Checker& c, const toml::table& t, const std::string& path, uint64_t rate,
                      uint32_t mtu) {
    const uint64_t frame = mtu + 14 + 4;
    const toml::node* b = t.get("burst");
    if (b == nullptr) return std::max<uint64_t>(rate / 8 / 100000, frame);
    Quantity q;
    if (!quantity_node(c, *b, path + ".burst", false, false, q)) return frame;
    if (t.get("rate") == nullptr)
        c.error(b->source(), path + ".burst", "a shaper's burst goes with its `rate`");
    const auto v = static_cast<uint64_t>(std::llround(q.value));
    if (v < frame)
        c.error(b->source(), path + ".burst",
                std::to_string(v) + " bytes is less than one frame (" + std::to_string(frame) +
                    " bytes at mtu " + std::to_string(mtu) + "): nothing could ever be sent");
    return v;
}

// An inner port's 802.1Q keys: `vlan`, `dscp_to_pcp = { 26 = 3, default = 0 }` and
// `pcp_to_dscp = [8 DSCPs]`.
void load_port_vlan(Checker& c, const toml::table& t, const std::string& path, PortConf& p) {
    p.vlan = static_cast<uint16_t>(c.integer(t, path, "vlan", 1, 4094, false).value_or(0));
    if (const toml::node* n = t.get("dscp_to_pcp")) {
        const std::string key = path + ".dscp_to_pcp";
        if (const toml::table* mt = table_at(c, *n, key)) {
            p.has_dscp_to_pcp = true;
            p.dscp_to_pcp.fill(
                static_cast<uint8_t>(c.integer(*mt, key, "default", 0, 7, false).value_or(0)));
            dscp_keyed_table(c, *mt, key, 7, true, [&](int dscp, uint8_t pcp) {
                p.dscp_to_pcp[static_cast<size_t>(dscp)] = pcp;
            });
            if (t.get("vlan") == nullptr)
                c.error(n->source(), key,
                        "decapsulated frames carry a PCP only in a VLAN tag: set the port's vlan");
        }
    }
    if (const toml::node* n = t.get("pcp_to_dscp")) {
        const std::string key = path + ".pcp_to_dscp";
        if (!n->is_array() || n->as_array()->size() != 8) {
            c.error(n->source(), key,
                    "expected 8 DSCPs, one per PCP 0..7 (e.g. [0, 8, 16, 24, 32, 46, 48, 56])");
            return;
        }
        size_t j = 0;
        bool ok = true;
        for (const toml::node& x : *n->as_array()) {
            auto v = c.integer_node(x, key + "[" + std::to_string(j) + "]", 0, 63);
            ok = ok && v.has_value();
            if (v) p.pcp_to_dscp[j] = static_cast<uint8_t>(*v);
            ++j;
        }
        p.has_pcp_to_dscp = ok;
    }
}

// `rx_workers = [0, 1, 1]`: RX queue q on worker rx_workers[q]; each entry a worker index, below
// `workers` when the config gives it (else checked by `run` against the lcores).
void load_rx_workers(Checker& c, const toml::table& t, const std::string& path, unsigned workers,
                     PortConf& p) {
    const toml::node* n = t.get("rx_workers");
    if (n == nullptr) return;
    const std::string key = path + ".rx_workers";
    constexpr size_t kMaxQueues = 128;
    if (!n->is_array() || n->as_array()->empty() || n->as_array()->size() > kMaxQueues) {
        c.error(n->source(), key,
                "expected an array of 1.." + std::to_string(kMaxQueues) +
                    " worker indexes, one per RX queue (e.g. [0, 1]: queue 0 on worker 0, "
                    "queue 1 on worker 1)");
        return;
    }
    const int64_t last = workers != 0 ? workers - 1 : 127;
    size_t j = 0;
    bool ok = true;
    for (const toml::node& x : *n->as_array()) {
        auto v = c.integer_node(x, key + "[" + std::to_string(j++) + "]", 0, last);
        ok = ok && v.has_value();
        if (v) p.rx_workers.push_back(static_cast<uint16_t>(*v));
    }
    if (!ok) p.rx_workers.clear();
}

void load_ports(Checker& c, const toml::table& root, Config& cfg) {
    const toml::node* n = root.get("ports");
    if (n == nullptr) {
        c.error(root.source(), "ports", "missing: at least one [[ports]] is required");
        return;
    }
    if (!n->is_array_of_tables()) {
        c.error(n->source(), "ports", "expected an array of tables ([[ports]])");
        return;
    }
    size_t i = 0;
    std::set<std::string> names, sanitised, devices;
    for (const toml::node& e : *n->as_array()) {
        const std::string path = "ports[" + std::to_string(i++) + "]";
        const toml::table* t = table_at(c, e, path);
        if (t == nullptr) continue;
        c.only_keys(
            *t, path,
            {"name", "role", "device", "mtu", "ipv4", "ipv6", "mac", "trust_dscp", "default_dscp",
             "rate", "burst", "vlan", "dscp_to_pcp", "pcp_to_dscp", "rx_workers"});
        PortConf p;
        p.name = checked_name(c, *t, path, names, sanitised, "port");
        if (auto role = c.str(*t, path, "role", true)) {
            if (*role == "inner")
                p.role = PortRole::inner;
            else if (*role == "outer")
                p.role = PortRole::outer;
            else
                c.error(t->get("role")->source(), path + ".role",
                        "\"" + *role + "\" is not valid; expected \"inner\" or \"outer\"");
        }
        p.device = c.str(*t, path, "device", true).value_or("");
        if (!p.device.empty() && !devices.insert(p.device).second)
            c.error(t->get("device")->source(), path + ".device",
                    "device \"" + p.device + "\" is used by another port");
        p.mtu = static_cast<uint32_t>(c.integer(*t, path, "mtu", 576, 16000, false).value_or(1500));
        p.has_mac = station_mac(c, *t, path, "mac", false, p.mac);
        p.trust_dscp = c.boolean(*t, path, "trust_dscp").value_or(false);
        p.default_dscp =
            static_cast<uint8_t>(c.integer(*t, path, "default_dscp", 0, 63, false).value_or(0));
        if (const toml::node* r = t->get("rate")) {
            Quantity q;
            if (quantity_node(c, *r, path + ".rate", true, false, q))
                p.rate = static_cast<uint64_t>(std::llround(q.value));
        }
        p.burst = shaper_burst(c, *t, path, p.rate, p.mtu);
        load_port_vlan(c, *t, path, p);
        load_rx_workers(c, *t, path, cfg.workers, p);
        if (p.role == PortRole::outer)
            for (const char* key :
                 {"trust_dscp", "default_dscp", "vlan", "dscp_to_pcp", "pcp_to_dscp"})
                if (const toml::node* k = t->get(key))
                    c.error(k->source(), path + "." + key,
                            "only inner ports classify: the key applies to the LAN side");
        for (int fam : {4, 6}) {
            const char* key = fam == 4 ? "ipv4" : "ipv6";
            auto s = c.str(*t, path, key, false);
            if (!s) continue;
            uint8_t f = 0;
            std::array<uint8_t, 16> a{};
            // ADDRESS or ADDRESS/LEN. An inner port's address puts it in routed mode, and the
            // prefix length tells which LAN hosts are on-link.
            const auto slash = s->find('/');
            std::string addr = s->substr(0, slash);
            if (!parse_ip(addr, f, a) || f != fam) {
                c.error(t->get(key)->source(), path + "." + key,
                        "\"" + *s + "\" is not an IPv" + std::to_string(fam) + " address");
                continue;
            }
            const unsigned max = fam == 4 ? 32 : 128;
            unsigned len = max;
            if (slash != std::string::npos) {
                const auto parsed =
                    parse_prefix_length(std::string_view(*s).substr(slash + 1), max);
                if (parsed)
                    len = *parsed;
                else {
                    c.error(t->get(key)->source(), path + "." + key,
                            "\"" + *s + "\": prefix length must be 0.." + std::to_string(max));
                    continue;
                }
            } else if (p.role == PortRole::inner) {
                c.error(t->get(key)->source(), path + "." + key,
                        "an inner port's address needs its LAN prefix length, e.g. \"" + addr +
                            (fam == 4 ? "/24" : "/64") + "\"");
                continue;
            }
            if (fam == 4) {
                p.has_ipv4 = true;
                p.ipv4_len = static_cast<uint8_t>(len);
                std::copy_n(a.begin(), 4, p.ipv4.begin());
            } else {
                p.has_ipv6 = true;
                p.ipv6_len = static_cast<uint8_t>(len);
                p.ipv6 = a;
            }
        }
        if (p.role == PortRole::outer && !p.has_ipv4 && !p.has_ipv6)
            c.error(t->source(), path,
                    "an outer port needs a local VTEP address: ipv4 and/or ipv6");
        if (p.role == PortRole::inner && p.vlan != 0 && (p.has_ipv4 || p.has_ipv6))
            c.error(t->get("vlan")->source(), path + ".vlan",
                    "a tagged LAN is supported on a transparent inner port only (no ipv4/ipv6): "
                    "the gateway's own ARP/ND would leave untagged");
        cfg.ports.push_back(std::move(p));
    }
    if (cfg.ports.size() > kMaxPorts)
        c.error(n->source(), "ports",
                "at most " + std::to_string(kMaxPorts) + " ports are supported");
}

// [[policers]]: RFC 2698 / RFC 2697 meters classes refer to by name. Rates in bits per second or
// "%" of the port's `rate` (the policer's `port`, else the only outer port); sizes in bytes,
// defaulting to 10 ms at the rate they go with. Returns where each one is, for the warning about
// policers no class uses.
std::vector<toml::source_region> load_policers(Checker& c, const toml::table& root, Config& cfg) {
    std::vector<toml::source_region> where;
    const toml::node* n = root.get("policers");
    if (n == nullptr) return where;
    if (!n->is_array_of_tables()) {
        c.error(n->source(), "policers", "expected an array of tables ([[policers]])");
        return where;
    }
    size_t i = 0;
    std::set<std::string> names, sanitised;
    for (const toml::node& e : *n->as_array()) {
        const std::string path = "policers[" + std::to_string(i++) + "]";
        const toml::table* t = table_at(c, e, path);
        if (t == nullptr) continue;
        c.only_keys(*t, path,
                    {"name", "mode", "cir", "pir", "cbs", "pbs", "ebs", "colour_aware", "yellow",
                     "red", "port"});
        PolicerConf pc;
        pc.name = checked_name(c, *t, path, names, sanitised, "policer");
        if (auto m = c.word(*t, path, "mode", {"trtcm", "srtcm"}))
            pc.mode = *m == 0 ? MeterMode::trtcm : MeterMode::srtcm;
        const bool tr = pc.mode == MeterMode::trtcm;
        static constexpr const char* kTrtcmOnly[] = {"pir", "pbs"};
        static constexpr const char* kSrtcmOnly[] = {"ebs"};
        for (const char* key : tr ? std::span<const char* const>(kSrtcmOnly)
                                  : std::span<const char* const>(kTrtcmOnly))
            if (const toml::node* k = t->get(key))
                c.error(k->source(), path + "." + key,
                        tr ? "trtcm (RFC 2698) has cbs and pbs; ebs belongs to mode = \"srtcm\""
                           : "srtcm (RFC 2697) has one rate: cir, cbs and ebs");
        // The port whose rate "%" is of.
        const PortConf* port = nullptr;
        if (auto pn = c.str(*t, path, "port", false)) {
            const int idx = cfg.port_index(*pn);
            if (idx < 0)
                c.error(t->get("port")->source(), path + ".port", "no port named \"" + *pn + "\"");
            else
                port = &cfg.ports[static_cast<size_t>(idx)];
        } else {
            for (const PortConf& p : cfg.ports)
                if (p.role == PortRole::outer) port = port == nullptr ? &p : nullptr;
        }
        const auto rate = [&](const char* key, bool required) -> uint64_t {
            const toml::node* k = t->get(key);
            if (k == nullptr) {
                if (required) c.error(t->source(), path + "." + key, "missing (required)");
                return 0;
            }
            Quantity q;
            if (!quantity_node(c, *k, path + "." + key, true, true, q)) return 0;
            if (!q.percent) {
                // rte_meter counts bytes per second: below one, there is no rate.
                if (q.value < 8) {
                    c.error(k->source(), path + "." + key, "a policer rate is at least 8 bit/s");
                    return 0;
                }
                return static_cast<uint64_t>(std::llround(q.value));
            }
            if (port == nullptr) {
                c.error(k->source(), path + "." + key,
                        "a \"%\" rate is a share of a port's rate: name the port (`port`), there "
                        "are several outer ports");
                return 0;
            }
            if (port->rate == 0) {
                c.error(k->source(), path + "." + key,
                        "a \"%\" rate needs the line rate of port \"" + port->name +
                            "\": set its `rate`");
                return 0;
            }
            const auto share = static_cast<uint64_t>(
                std::llround(static_cast<double>(port->rate) * q.value / 100.0));
            if (share < 8) {
                c.error(k->source(), path + "." + key,
                        "a policer rate is at least 8 bit/s; this share of port \"" + port->name +
                            "\" is " + std::to_string(share));
                return 0;
            }
            return share;
        };
        const auto size = [&](const char* key, uint64_t rate_bps) -> uint64_t {
            const toml::node* k = t->get(key);
            if (k == nullptr) return std::max<uint64_t>(rate_bps / 8 / 100, 1);  // 10 ms.
            Quantity q;
            if (!quantity_node(c, *k, path + "." + key, false, false, q)) return 1;
            return static_cast<uint64_t>(std::llround(q.value));
        };
        pc.cir = rate("cir", true);
        if (tr) {
            pc.pir = rate("pir", true);
            if (pc.cir != 0 && pc.pir != 0 && pc.pir < pc.cir)
                c.error(t->get("pir")->source(), path + ".pir",
                        "pir " + std::to_string(pc.pir) + " bit/s is below cir " +
                            std::to_string(pc.cir) + " bit/s (RFC 2698 needs pir >= cir)");
            pc.cbs = size("cbs", pc.cir);
            pc.pbs = size("pbs", pc.pir);
        } else {
            pc.cbs = size("cbs", pc.cir);
            pc.pbs = size("ebs", pc.cir);
        }
        pc.colour_aware = c.boolean(*t, path, "colour_aware").value_or(false);
        pc.yellow =
            static_cast<int16_t>(c.int_or_word(*t, path, "yellow", 0, 63, {{"keep", kColourKeep}})
                                     .value_or(kColourKeep));
        pc.red = static_cast<int16_t>(
            c.int_or_word(*t, path, "red", 0, 63, {{"drop", kColourDrop}}).value_or(kColourDrop));
        if (pc.colour_aware && pc.yellow < 0 && pc.red < 0)
            c.error(t->get("colour_aware")->source(), path + ".colour_aware",
                    "colour-aware metering tells a packet's colour by the yellow and red DSCPs: "
                    "set yellow and/or red to a DSCP");
        where.push_back(t->source());
        cfg.policers.push_back(std::move(pc));
    }
    if (cfg.policers.size() > kMaxPolicers)
        c.error(n->source(), "policers",
                "at most " + std::to_string(kMaxPolicers) + " policers are supported");
    return where;
}

// A class's `adaptive = [ { min_bytes, min_pps, min_bps, dscp }, ... ]`: first match wins.
void load_adaptive(Checker& c, const toml::table& t, const std::string& path, ClassRule& r) {
    const toml::node* n = t.get("adaptive");
    if (n == nullptr) return;
    const std::string key = path + ".adaptive";
    if (!n->is_array()) {
        c.error(n->source(), key, "expected an array of rules [{ min_bytes, min_pps, dscp }, ...]");
        return;
    }
    size_t j = 0;
    for (const toml::node& e : *n->as_array()) {
        const std::string rpath = key + "[" + std::to_string(j++) + "]";
        const toml::table* rt = table_at(c, e, rpath);
        if (rt == nullptr) continue;
        c.only_keys(*rt, rpath, {"min_bytes", "min_pps", "min_bps", "dscp"});
        AdaptiveRule a;
        a.min_bytes =
            static_cast<uint32_t>(c.integer(*rt, rpath, "min_bytes", 0, 65535, false).value_or(0));
        a.min_pps = static_cast<uint64_t>(
            c.integer(*rt, rpath, "min_pps", 0, 1000000000000, false).value_or(0));
        if (const toml::node* b = rt->get("min_bps")) {
            Quantity q;
            if (quantity_node(c, *b, rpath + ".min_bps", true, false, q))
                a.min_bps = static_cast<uint64_t>(std::llround(q.value));
        }
        a.dscp = static_cast<uint8_t>(c.integer(*rt, rpath, "dscp", 0, 63, true).value_or(0));
        if (rt->get("min_bytes") == nullptr && rt->get("min_pps") == nullptr &&
            rt->get("min_bps") == nullptr)
            c.error(rt->source(), rpath,
                    "a rule needs min_bytes, min_pps and/or min_bps (without, give the class "
                    "that dscp)");
        r.adaptive.push_back(a);
    }
    if (r.adaptive.size() > kMaxAdaptiveRules)
        c.error(n->source(), key,
                "at most " + std::to_string(kMaxAdaptiveRules) + " rules per class");
}

// Whether every packet of prefix list `b` (empty: any address) is in one of `a`'s.
bool prefixes_cover(const std::vector<Prefix>& a, const std::vector<Prefix>& b) {
    if (a.empty()) return true;
    if (b.empty()) return false;
    for (const Prefix& pb : b) {
        bool in = false;
        for (const Prefix& pa : a)
            in = in || (pa.family == pb.family && pa.len <= pb.len &&
                        prefix_match(pa.addr.data(), pa.len, pb.addr.data()));
        if (!in) return false;
    }
    return true;
}

// Whether class `a` matches every packet class `b` matches (so `b`, after `a`, never does): each
// key `a` tests, `b` tests for the same value, and `b`'s DSCPs and prefixes lie within `a`'s.
// Conservative: a key `b` implies without testing it (UDP port 4791 and ip_proto 17) is not
// counted, so the answer may miss a shadowed class but never names a live one.
bool class_covers(const ClassRule& a, const ClassRule& b) {
    const ClassMatch ma = compile_class(a), mb = compile_class(b);
    return (ma.mask & ~mb.mask) == 0 && ((ma.key ^ mb.key) & ma.mask) == 0 &&
           (mb.dscp_mask & ~ma.dscp_mask) == 0 && prefixes_cover(a.src, b.src) &&
           prefixes_cover(a.dst, b.dst);
}

// `resolve`: policer names must exist (false for the classes-only loader, which reads no
// [[policers]]).
void load_classes(Checker& c, const toml::table& root, Config& cfg, bool resolve = true) {
    const toml::node* n = root.get("classes");
    if (n == nullptr) return;
    if (!n->is_array_of_tables()) {
        c.error(n->source(), "classes", "expected an array of tables ([[classes]])");
        return;
    }
    size_t i = 0;
    std::set<std::string> names, sanitised;
    std::vector<std::pair<toml::source_region, std::string>> at;  // Per class: its table.
    for (const toml::node& e : *n->as_array()) {
        const std::string path = "classes[" + std::to_string(i++) + "]";
        const toml::table* t = table_at(c, e, path);
        if (t == nullptr) continue;
        c.only_keys(*t, path, {"name", "match", "dscp", "pcp", "policer", "adaptive"});
        ClassRule r;
        r.name = checked_name(c, *t, path, names, sanitised, "class");
        r.set_dscp = static_cast<int16_t>(
            c.int_or_word(*t, path, "dscp", 0, 63, {{"preserve", kDscpPreserve}})
                .value_or(kDscpPreserve));
        r.pcp = static_cast<int8_t>(c.integer(*t, path, "pcp", 0, 7, false).value_or(-1));
        if (const toml::node* m = t->get("match")) {
            const std::string mpath = path + ".match";
            if (const toml::table* mt = table_at(c, *m, mpath)) {
                c.only_keys(
                    *mt, mpath,
                    {"udp_dst_port", "bth_opcode", "ip_proto", "dscp", "src", "dst", "pcp"});
                if (auto v = c.integer(*mt, mpath, "pcp", 0, 7, false)) {
                    r.has_pcp = true;
                    r.match_pcp = static_cast<uint8_t>(*v);
                    if (!resolve)
                        c.error(mt->get("pcp")->source(), mpath + ".pcp",
                                "dscpgw-hostmark cannot match on the VLAN priority");
                }
                if (auto v = c.integer(*mt, mpath, "udp_dst_port", 0, 65535, false)) {
                    r.has_udp_dst_port = true;
                    r.udp_dst_port = static_cast<uint16_t>(*v);
                }
                if (auto v = c.integer(*mt, mpath, "bth_opcode", 0, 255, false)) {
                    r.has_bth_opcode = true;
                    r.bth_opcode = static_cast<uint8_t>(*v);
                }
                if (auto v = c.integer(*mt, mpath, "ip_proto", 0, 255, false)) {
                    r.has_ip_proto = true;
                    r.ip_proto = static_cast<uint8_t>(*v);
                }
                if (const toml::node* d = mt->get("dscp")) {
                    r.has_dscp = true;
                    if (d->is_array()) {
                        size_t j = 0;
                        for (const toml::node& x : *d->as_array())
                            if (auto v = c.integer_node(
                                    x, mpath + ".dscp[" + std::to_string(j++) + "]", 0, 63))
                                r.dscp_mask |= uint64_t{1} << *v;
                    } else if (auto v = c.integer_node(*d, mpath + ".dscp", 0, 63)) {
                        r.dscp_mask |= uint64_t{1} << *v;
                    }
                }
                for (const char* key : {"src", "dst"}) {
                    for (auto& [s, where] : c.strings(*mt, mpath, key)) {
                        std::string why;
                        if (auto p = parse_prefix(s, why))
                            (key[0] == 's' ? r.src : r.dst).push_back(*p);
                        else
                            c.error(where, mpath + "." + key, why);
                    }
                }
                if (r.has_bth_opcode && r.has_udp_dst_port && r.udp_dst_port != 4791)
                    c.error(mt->source(), mpath,
                            "bth_opcode only exists on UDP port 4791 (RoCEv2); this class can "
                            "never match");
            }
        }
        if (auto pn = c.str(*t, path, "policer", false)) {
            for (size_t j = 0; j < cfg.policers.size(); ++j)
                if (cfg.policers[j].name == *pn) r.policer = static_cast<int16_t>(j);
            if (r.policer < 0 && resolve)
                c.error(t->get("policer")->source(), path + ".policer",
                        "no [[policers]] named \"" + *pn + "\"");
        }
        load_adaptive(c, *t, path, r);
        cfg.classes.push_back(std::move(r));
        at.push_back({t->source(), path});
    }
    if (cfg.classes.size() > kMaxClasses)
        c.error(n->source(), "classes",
                "at most " + std::to_string(kMaxClasses) + " classes are supported");
    // Classes match first to last: a class every packet of which an earlier one takes is dead.
    for (size_t j = 0; j < cfg.classes.size(); ++j) {
        for (size_t k = 0; k < j; ++k) {
            if (!class_covers(cfg.classes[k], cfg.classes[j])) continue;
            c.warn(at[j].first, at[j].second,
                   "class \"" + cfg.classes[j].name + "\" can never match: class \"" +
                       cfg.classes[k].name + "\" (" + at[k].second + ", line " +
                       std::to_string(at[k].first.begin.line) +
                       ") comes first and matches every packet it does; put the narrower class "
                       "first");
            break;
        }
    }
}

// Picks the port a tunnel uses on one side: the named one, or the only one of that role.
int pick_port(Checker& c, const toml::table& t, const std::string& path, const char* key,
              PortRole role, const Config& cfg) {
    const char* role_name = role == PortRole::inner ? "inner" : "outer";
    if (auto name = c.str(t, path, key, false)) {
        const int idx = cfg.port_index(*name);
        if (idx < 0 || cfg.ports[static_cast<size_t>(idx)].role != role) {
            c.error(t.get(key)->source(), path + "." + key,
                    "\"" + *name + "\" is not an " + role_name + " port");
            return -1;
        }
        return idx;
    }
    int found = -1, count = 0;
    for (size_t i = 0; i < cfg.ports.size(); ++i)
        if (cfg.ports[i].role == role) {
            if (found < 0) found = static_cast<int>(i);
            ++count;
        }
    if (count == 0) {
        c.error(t.source(), path, std::string("no ") + role_name + " port is configured");
        return -1;
    }
    if (count > 1) {
        c.error(t.source(), path + "." + key,
                std::string("missing: required when there are several ") + role_name + " ports");
        return -1;
    }
    return found;
}

void load_tunnels(Checker& c, const toml::table& root, Config& cfg) {
    const toml::node* n = root.get("tunnels");
    if (n == nullptr) return;
    if (!n->is_array_of_tables()) {
        c.error(n->source(), "tunnels", "expected an array of tables ([[tunnels]])");
        return;
    }
    size_t i = 0;
    std::set<std::string> names, sanitised;
    std::map<std::tuple<uint8_t, uint8_t, std::array<uint8_t, 16>>, std::string> all_routes;
    for (const toml::node& e : *n->as_array()) {
        const std::string path = "tunnels[" + std::to_string(i++) + "]";
        const toml::table* t = table_at(c, e, path);
        if (t == nullptr) continue;
        c.only_keys(*t, path,
                    {"name",
                     "type",
                     "vni",
                     "remote",
                     "next_hop_mac",
                     "next_hop",
                     "routes",
                     "outer_dscp",
                     "ecn",
                     "inner_dscp_on_decap",
                     "ttl",
                     "udp_dst_port",
                     "port",
                     "inner_port",
                     "inner_mac",
                     "inner_vlan",
                     "udp6_zero_checksum_rx",
                     "udp6_zero_checksum_tx",
                     "mtu",
                     "rate",
                     "burst"});
        TunnelConf tc;
        tc.name = checked_name(c, *t, path, names, sanitised, "tunnel");
        if (auto s = c.str(*t, path, "inner_mac", false)) {
            tc.has_inner_mac = parse_mac(*s, tc.inner_mac);
            if (!tc.has_inner_mac)
                c.error(t->get("inner_mac")->source(), path + ".inner_mac",
                        "\"" + *s + "\" is not a MAC address (expected xx:xx:xx:xx:xx:xx)");
        }

        if (auto type = c.str(*t, path, "type", true)) {
            if (*type == "vxlan")
                tc.type = TunnelType::vxlan;
            else if (*type == "geneve")
                tc.type = TunnelType::geneve;
            else
                c.error(t->get("type")->source(), path + ".type",
                        "\"" + *type + "\" is not valid; expected \"vxlan\" or \"geneve\"");
        }
        tc.vni = static_cast<uint32_t>(c.integer(*t, path, "vni", 0, 0xffffff, true).value_or(0));
        tc.udp_port =
            static_cast<uint16_t>(c.integer(*t, path, "udp_dst_port", 1, 65535, false)
                                      .value_or(tc.type == TunnelType::vxlan ? 4789 : 6081));
        tc.ttl = static_cast<uint8_t>(c.integer(*t, path, "ttl", 1, 255, false).value_or(64));
        outer_dscp_policy(c, *t, path, tc);
        tc.decap_dscp = static_cast<int16_t>(
            c.int_or_word(*t, path, "inner_dscp_on_decap", 0, 63,
                          {{"preserve", kDscpPreserve}, {"copy-outer", kDscpCopyOuter}})
                .value_or(kDscpPreserve));
        if (auto ecn = c.word(*t, path, "ecn", {"rfc6040", "off"})) tc.ecn_rfc6040 = *ecn == 0;
        if (auto v = c.word(*t, path, "inner_vlan", {"drop", "keep"})) tc.inner_vlan_keep = *v == 1;
        tc.udp6_zero_csum_rx = c.boolean(*t, path, "udp6_zero_checksum_rx").value_or(false);
        tc.udp6_zero_csum_tx = c.boolean(*t, path, "udp6_zero_checksum_tx").value_or(false);
        std::array<uint8_t, 6> nh_mac{};
        const bool has_mac = t->get("next_hop_mac") != nullptr,
                   has_ip = t->get("next_hop") != nullptr;
        if (has_mac == has_ip)
            c.error(t->source(), path,
                    has_mac
                        ? "give next_hop_mac or next_hop, not both"
                        : "missing: next_hop_mac (a MAC) or next_hop (an IP resolved by ARP/ND)");
        station_mac(c, *t, path, "next_hop_mac", false, nh_mac);
        std::optional<std::pair<uint8_t, toml::source_region>> nh_family;
        if (uint8_t fam = 0; host_ip(c, *t, path, "next_hop", false, fam, tc.next_hop)) {
            tc.has_next_hop_ip = true;
            nh_family = std::make_pair(fam, t->get("next_hop")->source());
        }

        const int op = pick_port(c, *t, path, "port", PortRole::outer, cfg);
        const int ip = pick_port(c, *t, path, "inner_port", PortRole::inner, cfg);
        if (uint8_t fam = 0; t->get("remote") == nullptr || t->get("remote")->is_string()) {
            if (!host_ip(c, *t, path, "remote", true, fam, tc.remote)) {
                // Said by host_ip().
            } else {
                tc.outer_v6 = fam == 6;
                if (nh_family && nh_family->first != fam)
                    c.error(nh_family->second, path + ".next_hop",
                            "next hop is IPv" + std::to_string(nh_family->first) +
                                " but remote is IPv" + std::to_string(fam) +
                                ": the next hop must be reachable in the remote's family");
                if (op >= 0) {
                    const PortConf& p = cfg.ports[static_cast<size_t>(op)];
                    if (fam == 4 ? !p.has_ipv4 : !p.has_ipv6)
                        c.error(t->get("remote")->source(), path + ".remote",
                                "remote is IPv" + std::to_string(fam) + " but outer port \"" +
                                    p.name + "\" has no ipv" + std::to_string(fam) +
                                    " address to send from");
                    else if (fam == 4)
                        std::copy_n(p.ipv4.begin(), 4, tc.local.begin());
                    else
                        tc.local = p.ipv6;
                    // A tunnel to ourselves would loop every packet through the underlay.
                    for (const PortConf& q : cfg.ports)
                        if (q.role == PortRole::outer &&
                            (fam == 4 ? q.has_ipv4 && std::equal(q.ipv4.begin(), q.ipv4.end(),
                                                                 tc.remote.begin())
                                      : q.has_ipv6 && q.ipv6 == tc.remote))
                            c.error(t->get("remote")->source(), path + ".remote",
                                    "remote " + format_ip(fam, tc.remote.data()) +
                                        " is the VTEP address of outer port \"" + q.name +
                                        "\": a tunnel to itself");
                }
            }
        }
        if (ip >= 0 && tc.inner_vlan_keep && cfg.ports[static_cast<size_t>(ip)].vlan != 0)
            c.error(t->get("inner_vlan")->source(), path + ".inner_vlan",
                    "inner port \"" + cfg.ports[static_cast<size_t>(ip)].name +
                        "\" tags its frames (vlan): frames tagged by the far side cannot keep "
                        "their own tag there");
        if (op >= 0 && ip >= 0) {
            tc.outer_port = static_cast<uint16_t>(op);
            tc.inner_port = static_cast<uint16_t>(ip);
            const PortConf& outer = cfg.ports[static_cast<size_t>(op)];
            tc.outer_mtu = outer.mtu;
            tc.inner_mtu = cfg.ports[static_cast<size_t>(ip)].mtu;
            // The underlay path beyond the outer port may carry less than the port (a cloud's
            // 1460 or 8950 behind a 9000-byte link); never more.
            if (auto m = c.integer(*t, path, "mtu", tc.outer_v6 ? kMinPathMtu6 : kMinPathMtu4,
                                   16000, false)) {
                if (static_cast<uint32_t>(*m) > outer.mtu &&
                    !c.failed("ports[" + std::to_string(op) + "].mtu"))
                    c.error(t->get("mtu")->source(), path + ".mtu",
                            "tunnel mtu " + std::to_string(*m) + " exceeds outer port \"" +
                                outer.name + "\" mtu " + std::to_string(outer.mtu) +
                                ": the path cannot carry more than the link");
                else
                    tc.outer_mtu = static_cast<uint32_t>(*m);
            }
        }
        for (auto& [s, where] : c.strings(*t, path, "routes")) {
            std::string why;
            auto p = parse_prefix(s, why);
            if (!p) {
                c.error(where, path + ".routes", why);
                continue;
            }
            // A map, so that 100,000 routes are checked in O(n log n).
            const auto [it, fresh] =
                all_routes.try_emplace(std::make_tuple(p->family, p->len, p->addr), tc.name);
            if (!fresh)
                c.error(where, path + ".routes",
                        "route " + s + " is already routed to tunnel \"" + it->second + "\"");
            tc.routes.push_back(*p);
        }
        for (size_t j = 0; j < cfg.tunnels.size(); ++j) {
            const TunnelConf& o = cfg.tunnels[j];
            if (o.outer_port != tc.outer_port || o.udp_port != tc.udp_port) continue;
            if (o.type != tc.type)
                c.error(t->source(), path + ".udp_dst_port",
                        "UDP port " + std::to_string(tc.udp_port) + " already carries " +
                            (o.type == TunnelType::vxlan ? "VXLAN" : "Geneve") + " for tunnel \"" +
                            o.name + "\" on the same outer port");
            else if (o.remote == tc.remote && o.outer_v6 == tc.outer_v6 && o.vni == tc.vni)
                c.error(t->source(), path,
                        "same remote, VNI and UDP port as tunnel \"" + o.name +
                            "\": received packets could not be told apart");
        }
        if (const toml::node* r = t->get("rate")) {
            Quantity q;
            if (quantity_node(c, *r, path + ".rate", true, false, q))
                tc.rate = static_cast<uint64_t>(std::llround(q.value));
        }
        if (op >= 0) {
            const PortConf& outer = cfg.ports[static_cast<size_t>(op)];
            tc.burst = tc.rate != 0 || t->get("burst") != nullptr
                           ? shaper_burst(c, *t, path, tc.rate, outer.mtu)
                           : 0;
            if (tc.rate != 0 && outer.rate != 0 && tc.rate > outer.rate)
                c.warn(t->get("rate")->source(), path + ".rate",
                       "the tunnel's rate exceeds its port's (" + std::to_string(outer.rate) +
                           " bit/s): the port's shaper holds it lower");
        }
        cfg.tunnels.push_back(std::move(tc));
        cfg.next_hop_macs.push_back(nh_mac);
    }
    if (cfg.tunnels.size() > kMaxTunnels)
        c.error(n->source(), "tunnels",
                "at most " + std::to_string(kMaxTunnels) + " tunnels are supported");
    if (all_routes.size() > kMaxRoutes)
        c.error(n->source(), "tunnels",
                std::to_string(all_routes.size()) + " routes: at most " +
                    std::to_string(kMaxRoutes) + " in all are supported");
}

// [[queues]]: a port's egress queues (dataplane/sched.h). A port with queues has a rate; each
// class is in at most one queue of a port, and one queue takes "*" (everything else).
void load_queues(Checker& c, const toml::table& root, Config& cfg) {
    const toml::node* n = root.get("queues");
    if (n == nullptr) return;
    if (!n->is_array_of_tables()) {
        c.error(n->source(), "queues", "expected an array of tables ([[queues]])");
        return;
    }
    size_t i = 0;
    std::map<size_t, std::set<std::string>> names, sanitised, classes;
    std::map<size_t, toml::source_region> first_at;
    std::vector<QueueConf> all;
    for (const toml::node& e : *n->as_array()) {
        const std::string path = "queues[" + std::to_string(i++) + "]";
        const toml::table* t = table_at(c, e, path);
        if (t == nullptr) continue;
        c.only_keys(*t, path,
                    {"port", "name", "classes", "priority", "max_rate", "limit", "weight", "ecn"});
        QueueConf q;
        int port = -1;
        if (auto pn = c.str(*t, path, "port", true)) {
            port = cfg.port_index(*pn);
            if (port < 0)
                c.error(t->get("port")->source(), path + ".port", "no port named \"" + *pn + "\"");
            else if (cfg.ports[static_cast<size_t>(port)].rate == 0 &&
                     !c.failed("ports[" + std::to_string(port) + "].rate"))
                c.error(t->get("port")->source(), path + ".port",
                        "port \"" + *pn +
                            "\" has no `rate`: queues share a shaped port's rate; set it");
        }
        if (port < 0) continue;
        const auto pi = static_cast<size_t>(port);
        const PortConf& pc = cfg.ports[pi];
        q.port = static_cast<uint16_t>(port);
        q.name = checked_name(c, *t, path, names[pi], sanitised[pi], "queue");
        first_at.try_emplace(pi, t->source());
        if (t->get("classes") == nullptr)
            c.error(t->source(), path + ".classes", "missing (required): class names, or \"*\"");
        for (auto& [cn, where] : c.strings(*t, path, "classes")) {
            if (cn == "*") {
                if (q.any) c.error(where, path + ".classes", "\"*\" is given twice");
                q.any = true;
                if (!classes[pi].insert("*").second)
                    c.error(where, path + ".classes",
                            "another queue of port \"" + pc.name + "\" already takes \"*\"");
                continue;
            }
            bool known = false;
            for (const ClassRule& r : cfg.classes) known = known || r.name == cn;
            if (!known) {
                c.error(where, path + ".classes", "no [[classes]] named \"" + cn + "\"");
                continue;
            }
            if (!classes[pi].insert(cn).second) {
                c.error(
                    where, path + ".classes",
                    "class \"" + cn + "\" is already in another queue of port \"" + pc.name + "\"");
                continue;
            }
            q.classes.push_back(cn);
        }
        if (c.word(*t, path, "priority", {"strict"})) q.strict = true;
        if (const toml::node* w = t->get("weight")) {
            if (q.strict)
                c.error(w->source(), path + ".weight",
                        "a strict queue is served before every weighted one: it has no weight "
                        "(cap it with max_rate)");
            else if (auto v = c.integer(*t, path, "weight", 1, 1000, false))
                q.weight = static_cast<uint32_t>(*v);
        }
        if (const toml::node* mr = t->get("max_rate")) {
            Quantity qq;
            if (!q.strict)
                c.error(mr->source(), path + ".max_rate",
                        "max_rate caps a strict queue; a weighted queue's share is its weight");
            else if (quantity_node(c, *mr, path + ".max_rate", true, true, qq)) {
                q.max_rate = qq.percent ? static_cast<uint64_t>(std::llround(
                                              static_cast<double>(pc.rate) * qq.value / 100.0))
                                        : static_cast<uint64_t>(std::llround(qq.value));
                if (q.max_rate < 8) {
                    c.error(mr->source(), path + ".max_rate", "a rate is at least 8 bit/s");
                    q.max_rate = 8;
                }
            }
        }
        if (const toml::node* l = t->get("limit")) {
            Quantity qq;
            if (quantity_node(c, *l, path + ".limit", false, false, qq))
                q.limit = static_cast<uint64_t>(std::llround(qq.value));
            if (q.limit < pc.mtu + 18u)
                c.error(l->source(), path + ".limit",
                        std::to_string(q.limit) + " bytes holds not one frame of port \"" +
                            pc.name + "\"");
        }
        if (const toml::node* en = t->get("ecn")) {
            const std::string epath = path + ".ecn";
            if (const toml::table* et = table_at(c, *en, epath)) {
                c.only_keys(*et, epath, {"min", "max", "max_probability"});
                q.ecn = true;
                const auto size = [&](const char* key) -> uint64_t {
                    const toml::node* k = et->get(key);
                    if (k == nullptr) {
                        c.error(et->source(), epath + "." + key, "missing (required)");
                        return 0;
                    }
                    Quantity qq;
                    if (!quantity_node(c, *k, epath + "." + key, false, false, qq)) return 0;
                    return static_cast<uint64_t>(std::llround(qq.value));
                };
                q.ecn_min = size("min");
                q.ecn_max = size("max");
                if (q.ecn_max != 0 && q.ecn_min > q.ecn_max)
                    c.error(et->get("min")->source(), epath + ".min",
                            "min " + std::to_string(q.ecn_min) + " bytes is above max " +
                                std::to_string(q.ecn_max));
                if (q.ecn_min == q.ecn_max && q.ecn_max != 0)
                    q.ecn_min = q.ecn_max - 1;  // A step: every ECT packet marked from max on.
                if (const toml::node* mp = et->get("max_probability")) {
                    const auto v = mp->value<double>();
                    if (!v || *v < 0 || *v > 1)
                        c.error(mp->source(), epath + ".max_probability",
                                "expected a probability 0.0..1.0");
                    else
                        q.ecn_max_probability = *v;
                }
                if (q.ecn_max > q.limit)
                    c.warn(en->source(), epath + ".max",
                           "above the queue's limit (" + std::to_string(q.limit) +
                               " bytes): the limit drops before every packet is marked");
            }
        }
        all.push_back(std::move(q));
    }
    // Each port's queues together, in config order; a port with queues takes "*" somewhere.
    for (size_t p = 0; p < cfg.ports.size(); ++p) {
        size_t count = 0;
        for (const QueueConf& q : all)
            if (q.port == p) {
                cfg.queues.push_back(q);
                ++count;
            }
        if (count == 0) continue;
        if (classes[p].count("*") == 0)
            c.error(first_at.at(p), "queues",
                    "no queue of port \"" + cfg.ports[p].name +
                        "\" takes unclassified traffic: give one classes = [\"*\"]");
        if (count > kMaxQueuesPerPort)
            c.error(first_at.at(p), "queues",
                    "port \"" + cfg.ports[p].name + "\" has " + std::to_string(count) +
                        " queues; at most " + std::to_string(kMaxQueuesPerPort));
    }
    if (cfg.queues.size() > kMaxQueues)
        c.error(n->source(), "queues",
                "at most " + std::to_string(kMaxQueues) + " queues in all are supported");
}

void load_neighbors(Checker& c, const toml::table& root, Config& cfg) {
    const toml::node* n = root.get("neighbors");
    if (n == nullptr) return;
    if (!n->is_array_of_tables()) {
        c.error(n->source(), "neighbors", "expected an array of tables ([[neighbors]])");
        return;
    }
    size_t i = 0;
    for (const toml::node& e : *n->as_array()) {
        const std::string path = "neighbors[" + std::to_string(i++) + "]";
        const toml::table* t = table_at(c, e, path);
        if (t == nullptr) continue;
        c.only_keys(*t, path, {"port", "ip", "mac"});
        Config::StaticNeighbor sn;
        if (auto p = c.str(*t, path, "port", true)) {
            const int idx = cfg.port_index(*p);
            if (idx < 0)
                c.error(t->get("port")->source(), path + ".port", "no port named \"" + *p + "\"");
            else
                sn.port = static_cast<uint16_t>(idx);
        }
        host_ip(c, *t, path, "ip", true, sn.family, sn.addr);
        station_mac(c, *t, path, "mac", true, sn.mac);
        cfg.neighbors.push_back(sn);
    }
    if (cfg.neighbors.size() > kMaxStaticNeighbors)
        c.error(n->source(), "neighbors",
                "at most " + std::to_string(kMaxStaticNeighbors) + " static neighbors");
}

Config build(const toml::table& root, const std::string& source_name) {
    Checker c(source_name);
    Config cfg;
    cfg.path = source_name;
    c.only_keys(root, "", kTopLevelKeys);
    if (const toml::node* gw = root.get("gateway")) {
        if (const toml::table* t = table_at(c, *gw, "gateway")) {
            c.only_keys(*t, "gateway", {"workers", "icmp_rate", "log_level"});
            cfg.workers = static_cast<unsigned>(
                c.integer(*t, "gateway", "workers", 1, 128, false).value_or(0));
            cfg.icmp_rate = static_cast<uint32_t>(
                c.integer(*t, "gateway", "icmp_rate", 0, 1000000, false).value_or(100));
            if (auto l = c.str(*t, "gateway", "log_level", false)) {
                static constexpr const char* kLevels[] = {"emergency", "alert",   "critical",
                                                          "error",     "warning", "notice",
                                                          "info",      "debug"};
                if (std::find(std::begin(kLevels), std::end(kLevels), *l) == std::end(kLevels))
                    c.error(t->get("log_level")->source(), "gateway.log_level",
                            "\"" + *l +
                                "\": expected emergency, alert, critical, error, warning, "
                                "notice, info or debug");
                else
                    cfg.log_level = *l;
            }
        }
    }
    if (const toml::node* eal = root.get("eal")) {
        if (const toml::table* t = table_at(c, *eal, "eal")) {
            c.only_keys(*t, "eal", {"args"});
            for (auto& [s, where] : c.strings(*t, "eal", "args")) cfg.eal_args.push_back(s);
        }
    }
    if (const toml::node* m = root.get("metrics")) {
        if (const toml::table* t = table_at(c, *m, "metrics")) {
            c.only_keys(*t, "metrics", {"listen", "flows"});
            if (auto l = c.str(*t, "metrics", "listen", false)) {
                std::string why;
                if (!l->empty() && !valid_listen(*l, why))
                    c.error(t->get("listen")->source(), "metrics.listen", why);
                cfg.metrics_listen = *l;
            }
            cfg.flow_entries = static_cast<uint32_t>(
                c.integer(*t, "metrics", "flows", 0, 65536, false).value_or(kDefaultFlowEntries));
        }
    }
    if (const toml::node* ctl = root.get("control")) {
        if (const toml::table* t = table_at(c, *ctl, "control")) {
            c.only_keys(*t, "control", {"socket"});
            if (auto sp = c.str(*t, "control", "socket", false)) {
                if (sp->empty() || (*sp)[0] != '/' || sp->size() >= 108)
                    c.error(t->get("socket")->source(), "control.socket",
                            "expected an absolute path shorter than 108 bytes (a Unix socket)");
                else
                    cfg.control_socket = *sp;
            }
        }
    }
    load_ports(c, root, cfg);
    const auto policer_at = load_policers(c, root, cfg);
    load_classes(c, root, cfg);
    for (size_t i = 0; i < cfg.policers.size() && i < policer_at.size(); ++i) {
        bool used = false;
        for (const ClassRule& r : cfg.classes) used = used || r.policer == static_cast<int>(i);
        if (!used)
            c.warn(policer_at[i], "policers[" + std::to_string(i) + "]",
                   "policer \"" + cfg.policers[i].name + "\" is used by no class");
    }
    load_tunnels(c, root, cfg);
    load_queues(c, root, cfg);
    load_neighbors(c, root, cfg);
    c.finish();
    cfg.warnings = c.take_warnings();
    for (auto& t : cfg.tunnels) {
        auto& p = cfg.ports[t.outer_port];
        bool seen = false;
        for (auto& u : p.tunnel_udp_ports) seen = seen || u.udp_port == t.udp_port;
        if (!seen) p.tunnel_udp_ports.push_back({t.udp_port, t.type});
    }
    return cfg;
}

// Only [[classes]]: the other sections are a gateway's and are not validated here, but a top-level
// key no dscpgw config has is still an error (a typo would otherwise be silently ignored).
std::vector<ClassRule> build_classes(const toml::table& root, const std::string& source_name,
                                     std::vector<std::string>* warnings) {
    Checker c(source_name);
    Config cfg;
    c.only_keys(root, "", kTopLevelKeys);
    load_classes(c, root, cfg, false);
    c.finish();
    if (warnings != nullptr) *warnings = c.take_warnings();
    return std::move(cfg.classes);
}

toml::table parse_toml(std::string_view text, const std::string& source_name) {
    try {
        return toml::parse(text, source_name);
    } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << source_name << ':' << e.source().begin.line << ':' << e.source().begin.column
           << ": TOML syntax error: " << e.description();
        throw ConfigError(os.str());
    }
}

std::string read_file(const std::string& path) {
    // Non-blocking open: a FIFO must not stall the control thread; then a regular file only, of
    // bounded size (a device such as /dev/zero would never end).
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw ConfigError(path + ": cannot open config file: " + std::strerror(errno));
    struct FdCloser {
        int fd;
        ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        throw ConfigError(path + ": not a regular file");
    if (st.st_size > static_cast<off_t>(kMaxConfigBytes))
        throw ConfigError(path + ": " + std::to_string(st.st_size) +
                          " bytes; a config file is at most " + std::to_string(kMaxConfigBytes) +
                          " bytes");
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw ConfigError(path + ": cannot read config file: " + std::strerror(errno));
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > kMaxConfigBytes)
            throw ConfigError(path + ": grew past " + std::to_string(kMaxConfigBytes) +
                              " bytes while being read");
    }
    return text;
}

}  // namespace

ClassMatch compile_class(const ClassRule& c) {
    ClassMatch m;
    if (c.has_dscp) m.dscp_mask = c.dscp_mask;
    if (c.has_udp_dst_port) {
        m.key |= ClassMatch::kIsUdp | c.udp_dst_port;
        m.mask |= ClassMatch::kIsUdp | ClassMatch::kUdpPort;
    }
    if (c.has_bth_opcode) {
        m.key |= ClassMatch::kHasBth | uint64_t{c.bth_opcode} << ClassMatch::kOpcodeShift;
        m.mask |= ClassMatch::kHasBth | uint64_t{0xff} << ClassMatch::kOpcodeShift;
    }
    if (c.has_ip_proto) {
        m.key |= uint64_t{c.ip_proto} << ClassMatch::kProtoShift;
        m.mask |= uint64_t{0xff} << ClassMatch::kProtoShift;
    }
    if (c.has_pcp) {
        m.key |= ClassMatch::kHasTag | uint64_t{c.match_pcp} << ClassMatch::kPcpShift;
        m.mask |= ClassMatch::kHasTag | uint64_t{7} << ClassMatch::kPcpShift;
    }
    m.prefixes = !c.src.empty() || !c.dst.empty();
    m.set_dscp = static_cast<int8_t>(c.set_dscp);
    if (c.policer >= 0) {
        m.qos |= ClassMatch::kQosPolicer;
        m.policer = static_cast<uint8_t>(c.policer);
    }
    if (!c.adaptive.empty()) m.qos |= ClassMatch::kQosAdaptive;
    return m;
}

std::vector<ClassRule> parse_classes(std::string_view text, const std::string& source_name,
                                     std::vector<std::string>* warnings) {
    return build_classes(parse_toml(text, source_name), source_name, warnings);
}

std::vector<ClassRule> load_classes(const std::string& path, std::vector<std::string>* warnings) {
    return parse_classes(read_file(path), path, warnings);
}

int Config::first_port(PortRole role) const {
    for (size_t i = 0; i < ports.size(); ++i)
        if (ports[i].role == role) return static_cast<int>(i);
    return -1;
}

int Config::port_index(const std::string& name) const {
    for (size_t i = 0; i < ports.size(); ++i)
        if (ports[i].name == name) return static_cast<int>(i);
    return -1;
}

Config parse_config(std::string_view text, const std::string& source_name) {
    return build(parse_toml(text, source_name), source_name);
}

Config load_config(const std::string& path) { return parse_config(read_file(path), path); }

bool parse_mac(std::string_view s, std::array<uint8_t, 6>& mac) {
    if (s.size() != 17) return false;
    for (size_t i = 0; i < 6; ++i) {
        unsigned v = 0;
        for (size_t j = 0; j < 2; ++j) {
            const char ch = s[i * 3 + j];
            v <<= 4;
            if (ch >= '0' && ch <= '9')
                v |= static_cast<unsigned>(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                v |= static_cast<unsigned>(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F')
                v |= static_cast<unsigned>(ch - 'A' + 10);
            else
                return false;
        }
        if (i < 5 && s[i * 3 + 2] != ':') return false;
        mac[i] = static_cast<uint8_t>(v);
    }
    return true;
}

std::optional<Prefix> parse_prefix(std::string_view s, std::string& why) {
    const auto slash = s.find('/');
    if (slash == std::string_view::npos) {
        why = "\"" + std::string(s) + "\" is not a prefix (expected ADDRESS/LENGTH)";
        return std::nullopt;
    }
    Prefix p;
    if (!parse_ip(s.substr(0, slash), p.family, p.addr)) {
        why = "\"" + std::string(s) + "\" does not start with an IP address";
        return std::nullopt;
    }
    const unsigned max = p.family == 4 ? 32 : 128;
    const auto len = parse_prefix_length(s.substr(slash + 1), max);
    if (!len) {
        why = "\"" + std::string(s) + "\": prefix length must be 0.." + std::to_string(max);
        return std::nullopt;
    }
    p.len = static_cast<uint8_t>(*len);
    for (unsigned bit = p.len; bit < 128; ++bit) {
        if (p.addr[bit / 8] & (0x80 >> (bit % 8))) {
            why = "\"" + std::string(s) + "\" has host bits set beyond /" + std::to_string(p.len);
            return std::nullopt;
        }
    }
    return p;
}

std::string format_mac(const std::array<uint8_t, 6>& m) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    return buf;
}

std::vector<std::string> restart_reasons(const Config& a, const Config& b) {
    std::vector<std::string> why;
    if (a.eal_args != b.eal_args) why.emplace_back("[eal] args changed");
    if (a.workers != b.workers) why.emplace_back("[gateway] workers changed");
    if (a.flow_entries != b.flow_entries) why.emplace_back("[metrics] flows changed");
    if (a.metrics_listen != b.metrics_listen) why.emplace_back("[metrics] listen changed");
    if (a.control_socket != b.control_socket) why.emplace_back("[control] socket changed");
    if (a.ports.size() != b.ports.size()) {
        why.emplace_back("the number of [[ports]] changed");
        return why;
    }
    for (size_t i = 0; i < a.ports.size(); ++i) {
        const PortConf &p = a.ports[i], &q = b.ports[i];
        const std::string at = "ports[" + std::to_string(i) + "] (" + p.name + "): ";
        if (p.name != q.name) why.push_back(at + "name changed");
        if (p.device != q.device) why.push_back(at + "device changed");
        if (p.role != q.role) why.push_back(at + "role changed");
        if (p.has_mac != q.has_mac || p.mac != q.mac) why.push_back(at + "mac changed");
        if (p.rx_workers != q.rx_workers) why.push_back(at + "rx_workers changed");
        // A transparent inner port is promiscuous, an addressed one is not: set at start.
        if ((p.has_ipv4 || p.has_ipv6) != (q.has_ipv4 || q.has_ipv6))
            why.push_back(at + "gained or lost its addresses (receive mode is set at start)");
    }
    return why;
}

std::string format_ip(uint8_t family, const uint8_t* a) {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(family == 4 ? AF_INET : AF_INET6, a, buf, sizeof buf);
    return buf;
}

std::string format_prefix(const Prefix& p) {
    return format_ip(p.family, p.addr.data()) + "/" + std::to_string(p.len);
}

}  // namespace dscpgw
