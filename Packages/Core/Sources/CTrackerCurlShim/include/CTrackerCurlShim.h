#ifndef CTRACKER_CURL_SHIM_H
#define CTRACKER_CURL_SHIM_H
/*
 * Typed, non-variadic wrappers over libcurl's variadic setopt/getinfo calls, so Swift can call
 * them. Every wrapper passes exactly the C type libcurl expects for the option kind.
 */
#include <curl/curl.h>
#include <stdint.h>

typedef size_t (*ctracker_curl_data_cb)(char *ptr, size_t size, size_t nmemb, void *userdata);

/* curl_easy_setopt for `long` options. */
CURLcode ctracker_easy_setopt_long(CURL *handle, CURLoption option, long value);
/* curl_easy_setopt for `curl_off_t` options (the *_LARGE ones). */
CURLcode ctracker_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
/* curl_easy_setopt for `char *` options (curl copies strings, except POSTFIELDS). */
CURLcode ctracker_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
/* curl_easy_setopt for object-pointer options (PRIVATE, WRITEDATA, HEADERDATA, HTTPHEADER, POSTFIELDS). */
CURLcode ctracker_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
/* curl_easy_setopt for WRITEFUNCTION / HEADERFUNCTION. */
CURLcode ctracker_easy_setopt_data_cb(CURL *handle, CURLoption option, ctracker_curl_data_cb callback);
/* curl_easy_getinfo for `long` infos. */
CURLcode ctracker_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
/* curl_easy_getinfo for pointer infos (PRIVATE). */
CURLcode ctracker_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);
/* curl_multi_setopt for `long` options. */
CURLMcode ctracker_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
/*
 * Reads the next CURLMSG_DONE message: returns 1 and fills `easy` and `result`, or 0 when the
 * queue holds no more messages.
 */
int ctracker_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result);

/*
 * Names the calling thread for debuggers and profilers (at most 15 bytes are kept on Linux).
 * A thread started from a Dispatch worker otherwise keeps the worker's name.
 */
void ctracker_name_current_thread(const char *name);

/*
 * Linux: sets the calling thread's nice value (a thread's own, not the process's); elsewhere
 * does nothing. Returns 0 on success.
 */
int ctracker_nice_current_thread(int nice);

/*
 * Whether the calling thread is the process's main thread (Linux: its thread id is the process
 * id; Apple: pthread_main_np). Lets TrackerCore tell without Foundation's Thread.
 */
int ctracker_is_main_thread(void);

/*
 * Lock-free operations on a caller-allocated uint64_t, for Swift code that deploys to systems
 * older than Synchronization.Atomic (macOS 15, iOS 18, tvOS 18, visionOS 2). Clang and GCC
 * builtins; ThreadSanitizer understands them.
 */
static inline uint64_t ctracker_atomic_load_acquire(const uint64_t *cell) {
    return __atomic_load_n(cell, __ATOMIC_ACQUIRE);
}
static inline void ctracker_atomic_store_release(uint64_t *cell, uint64_t value) {
    __atomic_store_n(cell, value, __ATOMIC_RELEASE);
}
static inline void ctracker_atomic_store_relaxed(uint64_t *cell, uint64_t value) {
    __atomic_store_n(cell, value, __ATOMIC_RELAXED);
}
/* Adds `delta` (wrapping) and returns the new value. */
static inline uint64_t ctracker_atomic_add_relaxed(uint64_t *cell, uint64_t delta) {
    return __atomic_add_fetch(cell, delta, __ATOMIC_RELAXED);
}

/*
 * What the linked libcurl is (curl_version_info(CURLVERSION_NOW)), flattened for Swift:
 * version_num (0xXXYYZZ), the feature bits the transport relies on, and the version strings.
 * `protocols` and `feature_names` are libcurl's NULL-terminated lists (feature_names is NULL
 * before curl 7.87).
 */
typedef struct {
    unsigned int version_num;
    const char *version;
    const char *ssl_version;
    int has_ssl;
    int has_http2;
    const char *const *protocols;
    const char *const *feature_names;
} ctracker_curl_info;
ctracker_curl_info ctracker_curl_version_info(void);

/*
 * CURLOPT_CAINFO_BLOB: trust anchors as PEM bytes (libcurl copies them). Passing NULL clears
 * the option.
 */
CURLcode ctracker_easy_setopt_cainfo_blob(CURL *handle, const void *pem, size_t length);

#endif
