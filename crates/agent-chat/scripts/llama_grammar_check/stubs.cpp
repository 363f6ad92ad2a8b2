// Stand-ins for the parts of llama.cpp that llama-grammar.cpp and
// llama-impl.cpp link against but a grammar without a vocabulary never
// calls (models, GGUF files, tensors). Each aborts if it is ever reached.
#include "llama-vocab.h"
#include "llama-impl.h"
#include "ggml.h"
#include "ggml-backend.h"
#include "gguf.h"
#include <cstdlib>
#include <cstdio>
extern "C" {
void ggml_abort(const char * file, int line, const char * fmt, ...) { fprintf(stderr, "abort %s:%d\n", file, line); abort(); }
bool ggml_backend_buffer_is_host(ggml_backend_buffer_t) { abort(); }
void ggml_backend_tensor_set(struct ggml_tensor *, const void *, size_t, size_t) { abort(); }
bool ggml_is_matrix(const struct ggml_tensor *) { abort(); }
void ggml_log_get(ggml_log_callback * cb, void ** ud) { *cb = nullptr; *ud = nullptr; }
void ggml_log_set(ggml_log_callback, void *) {}
size_t ggml_row_size(enum ggml_type, int64_t) { abort(); }
int64_t ggml_time_us(void) { return 0; }
const void * gguf_get_arr_data(const struct gguf_context *, int64_t) { abort(); }
size_t gguf_get_arr_n(const struct gguf_context *, int64_t) { abort(); }
const char * gguf_get_arr_str(const struct gguf_context *, int64_t, size_t) { abort(); }
enum gguf_type gguf_get_arr_type(const struct gguf_context *, int64_t) { abort(); }
enum gguf_type gguf_get_kv_type(const struct gguf_context *, int64_t) { abort(); }
const void * gguf_get_val_data(const struct gguf_context *, int64_t) { abort(); }
const char * gguf_get_val_str(const struct gguf_context *, int64_t) { abort(); }
}
bool llama_vocab::is_eog(llama_token) const { abort(); }
const std::string & llama_vocab::token_to_piece(llama_token) const { abort(); }
int32_t llama_vocab::tokenize(const char *, int32_t, llama_token *, int32_t, bool, bool) const { abort(); }
#include "llama-mmap.h"
void llama_prefetch(llama_memory_ranges) { abort(); }
