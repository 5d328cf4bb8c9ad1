// The command-line conventions both binaries (dscpgw, dscpgw-hostmark) follow: subcommands with
// their own options, `--opt value` and `--opt=value`, `-h`/`--help` on every subcommand (the help
// lists that subcommand's options), `--version`, and one exit-code table (docs/operations.md).
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace dscpgw::cli {

// Exit codes of both binaries.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // A runtime failure: a device, the EAL, a socket, BPF.
inline constexpr int kExitUsage = 2;    // Bad usage, an invalid config or unusable input.

struct Option {
    const char* name;   // "--config".
    const char* value;  // The value's placeholder ("FILE"); nullptr for a flag.
    const char* help;
};

struct Command {
    const char* name;     // "check".
    const char* summary;  // One line.
    std::vector<Option> options;
    const char* operands = nullptr;  // Free words after the options ("COMMAND [ARGS]"), if any.
};

struct Parsed {
    std::map<std::string, std::string> values;  // By option name; flags map to "".
    std::vector<std::string> operands;
    bool help = false;
    bool version = false;  // --version, which every command takes.
    std::string error;     // Non-empty: bad usage.

    bool has(const std::string& name) const { return values.count(name) != 0; }
    std::string get(const std::string& name, const std::string& dflt = "") const {
        const auto it = values.find(name);
        return it == values.end() ? dflt : it->second;
    }
};

// Parses argv[first..argc) against `c`'s options. With operands allowed, the first word that is
// not an option ends the options: it and everything after it are operands, passed on as they are
// (`dscpgw ctl flows --top 5`).
inline Parsed parse(const Command& c, int argc, char** argv, int first) {
    Parsed p;
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            p.help = true;
            continue;
        }
        if (a == "--version") {
            p.version = true;
            continue;
        }
        if (a.size() < 2 || a[0] != '-') {  // An operand: the rest are too.
            if (c.operands == nullptr) {
                p.error = "unexpected argument " + a;
                return p;
            }
            for (; i < argc; ++i) p.operands.emplace_back(argv[i]);
            break;
        }
        std::string value;
        bool inline_value = false;
        if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a.resize(eq);
            inline_value = true;
        }
        const Option* o = nullptr;
        for (const Option& x : c.options)
            if (a == x.name) o = &x;
        if (o == nullptr) {
            p.error = "unknown option " + a;
            return p;
        }
        if (o->value == nullptr) {
            if (inline_value) {
                p.error = a + " takes no value";
                return p;
            }
        } else {
            if (!inline_value) {
                if (i + 1 >= argc) {
                    p.error = a + " needs a value (" + o->value + ")";
                    return p;
                }
                value = argv[++i];
            }
            if (value.empty()) {
                p.error = a + " needs a value (" + o->value + ")";
                return p;
            }
        }
        p.values[a] = value;
    }
    return p;
}

// "usage: PROG NAME [options]" and one line per option.
inline std::string help_text(const char* prog, const Command& c) {
    std::string o = std::string("usage: ") + prog + " " + c.name;
    if (!c.options.empty()) o += " [options]";
    if (c.operands != nullptr) o += std::string(" ") + c.operands;
    o += std::string("\n") + c.summary + "\n";
    o += "options:\n";
    const auto line = [&o](const std::string& head, const char* help) {
        std::string h = "  " + head;
        h.resize(std::max<size_t>(h.size() + 2, 26), ' ');
        o += h + help + "\n";
    };
    for (const Option& x : c.options)
        line(std::string(x.name) + (x.value ? std::string(" ") + x.value : ""), x.help);
    line("--version", "the version");
    line("-h, --help", "this help");
    return o;
}

// The program's own help: how to call it, its commands' one-line summaries and the exit codes
// (`more_exit_codes` follows the shared ones).
inline std::string program_help(const char* prog, const std::vector<const Command*>& cs,
                                const char* more_exit_codes = "") {
    std::string o = std::string("usage: ") + prog + " COMMAND [options]\n       " + prog +
                    " --version | --help\ncommands:\n";
    for (const Command* c : cs) {
        std::string head = std::string("  ") + c->name;
        head.resize(std::max<size_t>(head.size() + 2, 12), ' ');
        o += head + c->summary + "\n";
    }
    return o + prog +
           " COMMAND --help lists the command's options; exit codes: 0 ok, 1 runtime failure, 2 "
           "bad usage, config or input" +
           more_exit_codes + "\n";
}

// What a program's command line asks: a command to run with its options (`cmd` set), or nothing
// more (`cmd` null: the help, the version or a usage error was printed; exit with `exit_code`).
struct Invocation {
    const Command* cmd = nullptr;
    Parsed args;
    int exit_code = kExitUsage;
};

// The front both binaries share: `PROG --help | --version`, `PROG COMMAND [options]` parsed
// against that command's options, its --help (`command_help`, by default help_text()) and
// --version answered, a bad word reported.
struct Program {
    const char* name;
    std::vector<const Command*> commands;
    const char* more_exit_codes = "";
    void (*version)() = nullptr;
    void (*command_help)(const Command&) = nullptr;

    Invocation invoke(int argc, char** argv) const {
        Invocation r;
        if (argc < 2) {
            std::fputs(program_help(name, commands, more_exit_codes).c_str(), stderr);
            return r;
        }
        const std::string word = argv[1];
        if (word == "-h" || word == "--help" || word == "help") {
            std::fputs(program_help(name, commands, more_exit_codes).c_str(), stdout);
            r.exit_code = kExitOk;
            return r;
        }
        if (word == "--version" || word == "-V" || word == "version") {
            version();
            r.exit_code = kExitOk;
            return r;
        }
        const Command* c = nullptr;
        for (const Command* x : commands)
            if (word == x->name) c = x;
        if (c == nullptr) {
            std::fprintf(stderr, "%s: unknown command %s\n", name, word.c_str());
            std::fputs(program_help(name, commands, more_exit_codes).c_str(), stderr);
            return r;
        }
        r.args = parse(*c, argc, argv, 2);
        if (!r.args.error.empty()) return usage_error(*c, r.args.error);
        if (r.args.version || r.args.help) {
            if (r.args.version)
                version();
            else if (command_help != nullptr)
                command_help(*c);
            else
                std::fputs(help_text(name, *c).c_str(), stdout);
            r.exit_code = kExitOk;
            return r;
        }
        r.cmd = c;
        return r;
    }

    // Reports `why` for command `c` as bad usage.
    Invocation usage_error(const Command& c, const std::string& why) const {
        std::fprintf(stderr, "%s %s: %s (%s %s --help lists the options)\n", name, c.name,
                     why.c_str(), name, c.name);
        return Invocation{};
    }
};

}  // namespace dscpgw::cli
