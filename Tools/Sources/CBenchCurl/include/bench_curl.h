#ifndef BENCH_CURL_H
#define BENCH_CURL_H
/*
 * Baseline for the HTTP benchmark: a plain C loop over curl_easy_perform reusing one easy
 * handle (so one connection), with no Swift in the way.
 */

/*
 * Sends `count` sequential requests to `url` on one reused easy handle: a POST of `body`
 * (`body_length` bytes, content-type application/json) when `body` is not NULL, otherwise a GET.
 * Every answer must be status 200. Returns the elapsed wall time in nanoseconds, or a negative
 * value on failure (minus the CURLcode, or -1000 for an unexpected status / set-up failure).
 */
long long bench_curl_sequential(const char *url, int count, const char *body, long body_length);

/* Bytes malloc has handed out and not taken back (all arenas and mmapped chunks). */
unsigned long long bench_heap_in_use(void);

#endif
