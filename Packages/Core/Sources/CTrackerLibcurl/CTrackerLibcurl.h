/* libcurl for the tracker SDKs (system library; Debian: libcurl4-openssl-dev). */
#include <curl/curl.h>
