/* stoprule._util._native: the four system calls and checksums the stop needs, in one small module.
 *
 * A stop in a fresh process would otherwise load three of the standard library's shared libraries
 * for one function each (fcntl for flock, select for poll, zlib and libz for crc32 and adler32):
 * about 0.3 ms each. Optional: stoprule._util.native falls back to those modules when this one is
 * not built, with the same results (crc32 and adler32 are zlib's, value for value).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>

static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = crc_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = crc_table[0][c & 0xff] ^ (c >> 8);
            crc_table[k][n] = c;
        }
    }
}

/* CRC-32 (ISO-HDLC, zlib's), slicing by 8 bytes */
static uint32_t crc_update(uint32_t crc, const unsigned char *p, Py_ssize_t len) {
    crc = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* Adler-32 (zlib's): the sums are reduced every 5552 bytes, before they can overflow */
static uint32_t adler_update(uint32_t adler, const unsigned char *p, Py_ssize_t len) {
    uint32_t a = adler & 0xffff, b = adler >> 16;
    while (len > 0) {
        Py_ssize_t n = len < 5552 ? len : 5552;
        len -= n;
        while (n--) {
            a += *p++;
            b += a;
        }
        a %= 65521u;
        b %= 65521u;
    }
    return (b << 16) | a;
}

static PyObject *checksum(PyObject *args, uint32_t start, uint32_t (*update)(uint32_t, const unsigned char *, Py_ssize_t)) {
    Py_buffer data;
    unsigned int value = start;
    if (!PyArg_ParseTuple(args, "y*|I", &data, &value))
        return NULL;
    uint32_t out;
    if (data.len > 65536) {
        Py_BEGIN_ALLOW_THREADS out = update(value, data.buf, data.len);
        Py_END_ALLOW_THREADS
    } else {
        out = update(value, data.buf, data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(out);
}

static PyObject *native_crc32(PyObject *self, PyObject *args) {
    (void)self;
    return checksum(args, 0, crc_update);
}

static PyObject *native_adler32(PyObject *self, PyObject *args) {
    (void)self;
    return checksum(args, 1, adler_update);
}

static PyObject *native_flock(PyObject *self, PyObject *args) {
    (void)self;
    int fd, op, ret;
    if (!PyArg_ParseTuple(args, "ii", &fd, &op))
        return NULL;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS ret = flock(fd, op);
        Py_END_ALLOW_THREADS
        if (ret == 0)
            Py_RETURN_NONE;
        if (errno != EINTR)
            return PyErr_SetFromErrno(PyExc_OSError);
        if (PyErr_CheckSignals())
            return NULL;
    }
}

/* readable(fds, timeout_ms): the descriptors of ``fds`` that can be read without blocking (data,
 * end of file or an error) within ``timeout_ms`` (-1: no limit); [] when none did, or a signal
 * came first (its handler has run). */
static PyObject *native_readable(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    int timeout;
    if (!PyArg_ParseTuple(args, "Oi", &seq, &timeout))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "readable() expects a sequence of descriptors");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > 64) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "readable(): at most 64 descriptors");
        return NULL;
    }
    struct pollfd pfds[64];
    for (Py_ssize_t i = 0; i < n; i++) {
        long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (fd == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return NULL;
        }
        if (fd < 0 || fd > INT_MAX) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "readable(): a descriptor out of range");
            return NULL;
        }
        pfds[i].fd = (int)fd;
        pfds[i].events = POLLIN;
        pfds[i].revents = 0;
    }
    Py_DECREF(fast);
    int ret;
    Py_BEGIN_ALLOW_THREADS ret = poll(pfds, (nfds_t)n, timeout);
    Py_END_ALLOW_THREADS
    if (ret < 0) {
        if (errno != EINTR)
            return PyErr_SetFromErrno(PyExc_OSError);
        if (PyErr_CheckSignals())
            return NULL;
        ret = 0;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; ret > 0 && i < n; i++) {
        if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
            PyObject *fd = PyLong_FromLong(pfds[i].fd);
            if (fd == NULL || PyList_Append(out, fd) < 0) {
                Py_XDECREF(fd);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(fd);
        }
    }
    return out;
}

static PyMethodDef methods[] = {
    {"crc32", native_crc32, METH_VARARGS, "crc32(data, value=0): zlib.crc32's value."},
    {"adler32", native_adler32, METH_VARARGS, "adler32(data, value=1): zlib.adler32's value."},
    {"flock", native_flock, METH_VARARGS, "flock(fd, operation): as fcntl.flock (retried on a signal)."},
    {"readable", native_readable, METH_VARARGS,
     "readable(fds, timeout_ms): the descriptors that can be read without blocking ([] on timeout)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "stoprule._util._native", "flock, poll, crc32 and adler32 for the cold path", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "LOCK_SH", LOCK_SH) < 0 || PyModule_AddIntConstant(m, "LOCK_EX", LOCK_EX) < 0 ||
        PyModule_AddIntConstant(m, "LOCK_NB", LOCK_NB) < 0 || PyModule_AddIntConstant(m, "LOCK_UN", LOCK_UN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
