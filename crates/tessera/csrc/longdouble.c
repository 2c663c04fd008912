/*
 * Tessera numeric shim: the few numeric operations whose exact output
 * depends on the C library (glibc) and on x87 80-bit `long double`, which
 * Rust cannot reproduce natively. Wrapped by crates/tessera/src/util/numbers.rs;
 * nothing else should call these directly.
 *
 * - tessera_parse_double:  strtod-based double parsing with Redis' rules.
 * - tessera_parse_double_lenient: the bare strtod check of score ranges.
 * - tessera_format_g17:    "%.17g" formatting of a double.
 * - tessera_timeout_ms:    a blocking command's timeout, read as Redis
 *                          reads it (a long double of seconds).
 * - tessera_ld_*:          long double parsing (strtold), addition and
 *                          "human" formatting ("%.17Lf" minus trailing
 *                          zeros), as INCRBYFLOAT / HINCRBYFLOAT need.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest accepted long double input (exclusive) and output buffer size. */
#define TESSERA_LD_BUF 5120

/*
 * Parses `s[0..len)` as a double. `s[len]` must be a NUL byte. Rejects the
 * empty string, a leading space, anything strtod does not consume entirely
 * (including embedded NULs), overflow to +/-HUGE_VAL, underflow to zero, and
 * NaN. Returns 1 and stores the value on success, 0 otherwise.
 */
int tessera_parse_double(const char *s, size_t len, double *out) {
    char *end = NULL;
    double v;

    if (len == 0 || isspace((unsigned char)s[0])) return 0;
    errno = 0;
    v = strtod(s, &end);
    if ((size_t)(end - s) != len) return 0;
    if (errno == ERANGE &&
        (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO))
        return 0;
    if (isnan(v)) return 0;
    *out = v;
    return 1;
}

/*
 * Bare strtod as ZRANGEBYSCORE & co. use it on a NUL-terminated `s`: only
 * requires strtod to stop at the terminating NUL and the value not to be
 * NaN (so "", leading spaces, overflow to +/-inf and underflow are fine).
 */
int tessera_parse_double_lenient(const char *s, double *out) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end[0] != '\0' || isnan(v)) return 0;
    *out = v;
    return 1;
}

/* Writes "%.17g" of `v` into out (cap bytes, NUL-terminated); returns the
 * length, or -1 if it did not fit. */
int tessera_format_g17(double v, char *out, size_t cap) {
    int n = snprintf(out, cap, "%.17g", v);
    if (n < 0 || (size_t)n + 1 > cap) return -1;
    return n;
}

/* Long double parse with the rules above plus a length cap of
 * TESSERA_LD_BUF - 1 bytes. `s` need not be NUL-terminated. */
static int parse_ld(const char *s, size_t len, long double *out) {
    char buf[TESSERA_LD_BUF];
    char *end = NULL;
    long double v;

    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (isspace((unsigned char)buf[0])) return 0;
    errno = 0;
    v = strtold(buf, &end);
    if ((size_t)(end - buf) != len) return 0;
    if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || v == 0))
        return 0;
    if (isnan(v)) return 0;
    *out = v;
    return 1;
}

/* "%.17Lf", then trailing zeros and a trailing '.' dropped, "-0" -> "0";
 * infinities as "inf"/"-inf". Returns the length, or 0 if cap is too small. */
static size_t ld_human(long double v, char *out, size_t cap) {
    int n;
    size_t l;

    if (isinf(v)) {
        if (cap < 5) return 0;
        if (v > 0) {
            memcpy(out, "inf", 4);
            return 3;
        }
        memcpy(out, "-inf", 5);
        return 4;
    }
    n = snprintf(out, cap, "%.17Lf", v);
    if (n < 0 || (size_t)n + 1 > cap) return 0;
    l = (size_t)n;
    if (memchr(out, '.', l) != NULL) {
        while (l > 0 && out[l - 1] == '0') l--;
        if (l > 0 && out[l - 1] == '.') l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        l = 1;
    }
    out[l] = '\0';
    return l;
}

/*
 * INCRBYFLOAT: parses `a` (current value) and `b` (increment), adds them in
 * long double and formats the sum in human form into `out`.
 * Returns 0 on success (length in *outlen), 1 if `a` is not a valid float,
 * 2 if `b` is not, 3 if the sum is NaN or infinite, 4 if `out` is too small.
 */
int tessera_ld_incr(const char *a, size_t alen, const char *b, size_t blen,
                    char *out, size_t cap, size_t *outlen) {
    long double x, y, sum;
    size_t l;

    if (!parse_ld(a, alen, &x)) return 1;
    if (!parse_ld(b, blen, &y)) return 2;
    sum = x + y;
    if (isnan(sum) || isinf(sum)) return 3;
    l = ld_human(sum, out, cap);
    if (l == 0) return 4;
    *outlen = l;
    return 0;
}

/*
 * A blocking command's timeout as Redis 7.0 reads it: seconds as a long
 * double (so 1e400 is a number and 1e-400 a tiny positive one), times 1000,
 * rounded up, then converted to long long the way x86-64 does, where
 * anything out of range (infinities included) becomes LLONG_MIN. Returns 1
 * and stores the milliseconds, or 0 if `s` is not a long double.
 */
int tessera_timeout_ms(const char *s, size_t len, long long *out) {
    long double v, ms;
    if (!parse_ld(s, len, &v)) return 0;
    ms = ceill(v * 1000.0L);
    if (ms >= -9223372036854775808.0L && ms < 9223372036854775808.0L)
        *out = (long long)ms;
    else
        *out = LLONG_MIN;
    return 1;
}

/* Classifies `s` as a long double: -1 invalid, 0 finite, 1 infinite. */
int tessera_ld_classify(const char *s, size_t len) {
    long double v;
    if (!parse_ld(s, len, &v)) return -1;
    return isinf(v) ? 1 : 0;
}

/* Parses `s` as a long double and formats it in human form.
 * Returns 0 on success, 1 if invalid, 4 if `out` is too small. */
int tessera_ld_human(const char *s, size_t len, char *out, size_t cap,
                     size_t *outlen) {
    long double v;
    size_t l;
    if (!parse_ld(s, len, &v)) return 1;
    l = ld_human(v, out, cap);
    if (l == 0) return 4;
    *outlen = l;
    return 0;
}

/* Formats a double, widened to long double, in human form (GEOPOS etc.).
 * Returns the length, or 0 if `out` is too small. */
size_t tessera_f64_human(double v, char *out, size_t cap) {
    return ld_human((long double)v, out, cap);
}
