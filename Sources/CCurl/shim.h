#ifndef BLUELIBRARY_CCURL_SHIM_H
#define BLUELIBRARY_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic: Swift cannot call them, so each
   argument type gets a typed wrapper. */
static inline CURLcode bl_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode bl_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode bl_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode bl_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
typedef size_t (*bl_curl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode bl_curl_easy_setopt_data_callback(CURL *handle, CURLoption option, bl_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode bl_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode bl_curl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
#endif
