/* A native node addon (N-API): exports answer() -> 42. */
#include <node_api.h>

static napi_value answer(napi_env env, napi_callback_info info) {
    (void)info;
    napi_value v;
    napi_create_int32(env, 42, &v);
    return v;
}

NAPI_MODULE_INIT() {
    napi_value fn;
    napi_create_function(env, "answer", NAPI_AUTO_LENGTH, answer, NULL, &fn);
    napi_set_named_property(env, exports, "answer", fn);
    return exports;
}
