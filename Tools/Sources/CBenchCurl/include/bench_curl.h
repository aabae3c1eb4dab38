#ifndef BENCH_CURL_H
#define BENCH_CURL_H
/* Baseline for the HTTP benchmark: a plain C loop over curl_easy_perform (filled in by the transport work). */
int bench_curl_placeholder(void);
#endif
