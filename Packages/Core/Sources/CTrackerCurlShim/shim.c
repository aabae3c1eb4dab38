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

ctracker_curl_info ctracker_curl_version_info(void) {
    ctracker_curl_info info = {0};
    const curl_version_info_data *data = curl_version_info(CURLVERSION_NOW);
    if (data == NULL) return info;
    info.version_num = data->version_num;
    info.version = data->version;
    info.ssl_version = data->ssl_version;
    info.has_ssl = (data->features & CURL_VERSION_SSL) != 0;
    info.has_http2 = (data->features & CURL_VERSION_HTTP2) != 0;
    info.protocols = (const char *const *)data->protocols;
#if LIBCURL_VERSION_NUM >= 0x075700 /* feature_names (age CURLVERSION_ELEVENTH) since 7.87.0 */
    info.feature_names = data->age >= CURLVERSION_ELEVENTH ? data->feature_names : NULL;
#else
    info.feature_names = NULL;
#endif
    return info;
}

CURLcode ctracker_easy_setopt_cainfo_blob(CURL *handle, const void *pem, size_t length) {
    if (pem == NULL) return curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, (struct curl_blob *)NULL);
    struct curl_blob blob;
    blob.data = (void *)pem;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &blob);
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

int ctracker_is_main_thread(void) {
#if defined(__APPLE__)
    return pthread_main_np() != 0;
#elif defined(__linux__)
    return getpid() == (pid_t)syscall(SYS_gettid);
#else
    return 0;
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
