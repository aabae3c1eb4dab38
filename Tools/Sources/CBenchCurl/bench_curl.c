#include "bench_curl.h"
int bench_curl_placeholder(void) { return 0; }
