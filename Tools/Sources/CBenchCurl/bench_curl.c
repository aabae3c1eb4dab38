#include "bench_curl.h"

#include <curl/curl.h>
#include <time.h>

static size_t bench_discard(char *ptr, size_t size, size_t nmemb, void *userdata) {
    (void)ptr;
    *(size_t *)userdata += size * nmemb;
    return size * nmemb;
}

static long long bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long bench_curl_sequential(const char *url, int count, const char *body, long body_length) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return -1000;
    CURL *easy = curl_easy_init();
    if (easy == NULL) return -1000;
    struct curl_slist *headers = NULL;
    size_t received = 0;
    long long result = 0;

    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 15000L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, bench_discard);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &received);
    if (body != NULL) {
        headers = curl_slist_append(headers, "content-type: application/json");
        headers = curl_slist_append(headers, "Expect:");
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, body_length);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
    }

    long long start = bench_now_ns();
    for (int i = 0; i < count; i++) {
        CURLcode code = curl_easy_perform(easy);
        if (code != CURLE_OK) { result = -(long long)code; break; }
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) { result = -1000; break; }
    }
    if (result == 0) result = bench_now_ns() - start;

    curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
    return result;
}

#include <malloc.h>

unsigned long long bench_heap_in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return (unsigned long long)(m.uordblks + m.hblkhd);
}
