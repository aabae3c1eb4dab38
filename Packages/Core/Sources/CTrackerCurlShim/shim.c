#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include "CTrackerCurlShim.h"

#include <pthread.h>
#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

CURLcode ctracker_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode ctracker_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode ctracker_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode ctracker_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode ctracker_easy_setopt_data_cb(CURL *handle, CURLoption option, ctracker_curl_data_cb callback) {
    return curl_easy_setopt(handle, option, callback);
}
CURLcode ctracker_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
CURLcode ctracker_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
CURLMcode ctracker_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
int ctracker_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(multi, &queued)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            *easy = msg->easy_handle;
            *result = msg->data.result;
            return 1;
        }
    }
    return 0;
}

void ctracker_name_current_thread(const char *name) {
#if defined(__APPLE__)
    pthread_setname_np(name);
#elif defined(__linux__)
    char truncated[16];
    size_t i = 0;
    for (; i < sizeof truncated - 1 && name[i] != '\0'; i++) truncated[i] = name[i];
    truncated[i] = '\0';
    pthread_setname_np(pthread_self(), truncated);
#else
    (void)name;
#endif
}

int ctracker_nice_current_thread(int nice) {
#if defined(__linux__)
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
#else
    (void)nice;
    return 0;
#endif
}
