// Runs the grammars and trigger patterns written by `cargo run --example
// dump_grammars -- DIR` through llama.cpp's own grammar parser and engine
// (llama-grammar.cpp) and through std::regex, as llama.cpp applies them.
#include "llama-grammar.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

static std::string slurp(const std::string & path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

static std::vector<uint32_t> code_points(const std::string & s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
        unsigned char c = s[i];
        int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
        for (int k = 1; k < n; k++) cp = (cp << 6) | (s[i + k] & 0x3F);
        out.push_back(cp);
        i += n;
    }
    return out;
}

static bool admits(const llama_grammar & base, const std::string & input) {
    llama_grammar * g = llama_grammar_clone_impl(base);
    auto & stacks = llama_grammar_get_stacks(g);
    bool alive = true;
    for (auto cp : code_points(input)) {
        llama_grammar_accept(g, cp);
        if (stacks.empty()) { alive = false; break; }
    }
    bool done = false;
    for (auto & stack : stacks) done |= stack.empty();
    llama_grammar_free_impl(g);
    return alive && done;
}

// Where llama.cpp starts the grammar: the first non-empty group, else the match.
static long trigger_start(const std::string & pattern, const std::string & text) {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(pattern))) return -1;
    for (size_t i = 1; i < m.size(); i++) if (m.length(i) > 0) return m.position(i);
    return m.position(0);
}

static bool ends_with(const std::string & s, const std::string & end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

int main(int argc, char ** argv) {
    if (argc != 2) { fprintf(stderr, "usage: check DIR\n"); return 2; }
    int checked = 0, failures = 0;
    for (auto & entry : std::filesystem::directory_iterator(argv[1])) {
        std::string path = entry.path().string();
        if (ends_with(path, ".gbnf")) {
            std::string stem = path.substr(0, path.size() - 5);
            std::string src = slurp(path);
            llama_grammar * g = llama_grammar_init_impl(nullptr, src.c_str(), "root", false, nullptr, 0, nullptr, 0);
            if (!g) { printf("%s: llama.cpp rejects the grammar\n", path.c_str()); failures++; continue; }
            for (const char * kind : {"admit", "refuse"}) {
                for (int i = 0; ; i++) {
                    std::string input = stem + "." + kind + std::to_string(i) + ".txt";
                    if (!std::filesystem::exists(input)) break;
                    bool want = std::string(kind) == "admit";
                    checked++;
                    if (admits(*g, slurp(input)) != want) {
                        printf("%s: %s\n", input.c_str(), want ? "refused" : "admitted");
                        failures++;
                    }
                }
            }
            llama_grammar_free_impl(g);
        } else if (ends_with(path, ".patterns")) {
            std::string stem = path.substr(0, path.size() - 9);
            std::string pattern = slurp(path);
            for (int i = 0; ; i++) {
                std::string text = stem + ".trigger" + std::to_string(i) + ".txt";
                if (!std::filesystem::exists(text)) break;
                long want = std::stol(slurp(stem + ".trigger" + std::to_string(i) + ".want"));
                long got = trigger_start(pattern, slurp(text));
                checked++;
                if (got != want) { printf("%s: fires at %ld, not %ld\n", text.c_str(), got, want); failures++; }
            }
        }
    }
    printf("%d checked, %d failed\n", checked, failures);
    return failures != 0;
}
