/* libcurl for the tracker SDKs on Apple platforms: our static build (Tools/curl-apple). */
#include <curl/curl.h>
