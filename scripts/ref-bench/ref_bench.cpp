// Reference speed of llama.cpp itself, for `scripts/bench engine`.
//
// The llama.cpp source vendored in the llama-cpp-sys-2 crate ships without the
// tools/ sources, so llama-bench cannot be built from it. This program
// measures exactly what llama-bench's pp/tg tests measure, with the same
// method, on the same vendored llama.cpp and the same build flags as the
// engine: pp = evaluate N prompt tokens in n_batch chunks from an empty KV
// cache; tg = N single-token decodes; a warm-up run first; mean of reps.
// No sampling or detokenising: this is llama.cpp's raw floor.
//
// Usage: ref_bench MODEL N_PROMPT N_GEN THREADS N_BATCH REPS [N_GPU_LAYERS]
// → JSON on stdout. N_GPU_LAYERS (default 0, the CPU) needs a GPU build of
// this program (scripts/bench engine --gpu-layers N).

#include "llama.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void quiet(ggml_log_level, const char *, void *) {}

static bool test_prompt(llama_context * ctx, const llama_vocab * vocab, int n_prompt, int n_batch) {
    const int n_vocab = llama_vocab_n_tokens(vocab);
    std::vector<llama_token> tokens(n_batch);
    int done = 0;
    while (done < n_prompt) {
        const int n = std::min(n_batch, n_prompt - done);
        tokens[0] = done == 0 ? llama_vocab_bos(vocab) : std::rand() % n_vocab;
        for (int i = 1; i < n; i++) tokens[i] = std::rand() % n_vocab;
        if (llama_decode(ctx, llama_batch_get_one(tokens.data(), n)) != 0) return false;
        done += n;
    }
    llama_synchronize(ctx);
    return true;
}

static bool test_gen(llama_context * ctx, const llama_vocab * vocab, int n_gen) {
    const int n_vocab = llama_vocab_n_tokens(vocab);
    llama_token token = llama_vocab_bos(vocab);
    for (int i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) return false;
        llama_synchronize(ctx);
        token = std::rand() % n_vocab;
    }
    return true;
}

int main(int argc, char ** argv) {
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: %s MODEL N_PROMPT N_GEN THREADS N_BATCH REPS [N_GPU_LAYERS]\n", argv[0]);
        return 2;
    }
    const char * path = argv[1];
    const int n_prompt = atoi(argv[2]), n_gen = atoi(argv[3]), threads = atoi(argv[4]);
    const int n_batch = atoi(argv[5]), reps = atoi(argv[6]);

    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    // llama.cpp's default (-1) offloads everything in a GPU build: be explicit.
    mp.n_gpu_layers = argc == 8 ? atoi(argv[7]) : 0;
    llama_model * model = llama_model_load_from_file(path, mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", path); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_prompt + n_gen + 64;
    cp.n_batch = n_batch;
    cp.n_ubatch = n_batch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }
    llama_memory_t mem = llama_get_memory(ctx);

    // Warm-up, as llama-bench does.
    test_prompt(ctx, vocab, n_prompt, n_batch);
    llama_memory_clear(mem, false);
    test_gen(ctx, vocab, 1);

    double pp = 0, tg = 0;
    for (int r = 0; r < reps; r++) {
        llama_memory_clear(mem, false);
        double t = now_s();
        if (!test_prompt(ctx, vocab, n_prompt, n_batch)) return 1;
        pp += n_prompt / (now_s() - t);
        llama_memory_clear(mem, false);
        t = now_s();
        if (!test_gen(ctx, vocab, n_gen)) return 1;
        tg += n_gen / (now_s() - t);
    }
    printf("{\"prefill_tok_s\": %.2f, \"decode_tok_s\": %.2f, \"gpu_layers\": %d, \"system_info\": \"%s\"}\n",
           pp / reps, tg / reps, mp.n_gpu_layers, llama_print_system_info());
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
