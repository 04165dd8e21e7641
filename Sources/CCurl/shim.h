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

/* Callbacks the cover fetcher installs. Header lines arrive through the same signature as
   body data (bl_curl_data_callback). */
typedef curl_socket_t (*bl_curl_opensocket_callback)(void *clientp, curlsocktype purpose,
                                                      struct curl_sockaddr *address);
static inline CURLcode bl_curl_easy_setopt_opensocket_callback(CURL *handle, bl_curl_opensocket_callback value) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, value);
}
typedef int (*bl_curl_prereq_callback)(void *clientp, char *conn_primary_ip, char *conn_local_ip,
                                       int conn_primary_port, int conn_local_port);
static inline CURLcode bl_curl_easy_setopt_prereq_callback(CURL *handle, bl_curl_prereq_callback value) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, value);
}
/* The address inside curl_sockaddr is as long as addrlen (a sockaddr_in6 does not fit the
   declared struct sockaddr), so Swift must read it through a pointer, never a copy. */
static inline const struct sockaddr *bl_curl_sockaddr_address(const struct curl_sockaddr *address) {
    return &address->addr;
}
static inline curl_socket_t bl_curl_socket_bad(void) { return CURL_SOCKET_BAD; }
#endif
