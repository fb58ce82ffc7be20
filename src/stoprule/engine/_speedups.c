/* stoprule.engine._speedups: one fact validated, projected, matched and decided in C.
 *
 * The accelerator behind stoprule's Evaluator (src/stoprule/engine/speedups.py builds the programs
 * this module runs and is the place to read first). It covers the common case only: a fact
 * whose every value is valid, strings ASCII, aliases resolved and unknown keys listed at its top
 * level only. For anything else (an error, an unknown key deeper down, a field given twice, a
 * string to check) Runner.run returns None and the caller runs the pure-Python path, which
 * names the error; so whatever this module accepts, the Python path accepts with the same data.
 *
 * Per fact: validate against the schema program, key by key, keeping the validated values
 * (defaults filled; the fact itself is not copied for the runner), write the projection from
 * them as the engine's JSON (the same text, character for character, as the generated Python
 * projector), assert it into each ruleset under a fresh id, drain the action queue into a
 * bitmask of matched rules, retract by id, and decide: the winner's prototype verdict with the
 * matches, the high-risk stop, the rendered messages and the warnings put in (see decide).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define FORMAT 5 /* the program layout speedups.py writes; bumped when it changes */

/* The engine's C API (durable_rules' rules.h), found in the engine module stoprule has already
 * loaded (dlopen RTLD_NOLOAD): the same calls its Python binding makes, without the binding's
 * argument parsing and the Python strings it builds for each action. */
#define RULES_OK 0
#define ERR_EVENT_DEFERRED 3 /* 1..3: the fact matched no rule (not stored): as the binding's result */
#define ERR_NO_ACTION_AVAILABLE 310
typedef unsigned int (*assert_fn)(unsigned int handle, char *message, unsigned int *state);
typedef unsigned int (*start_fn)(unsigned int handle, unsigned int state, char **state_fact, char **messages);
typedef unsigned int (*next_fn)(unsigned int handle, unsigned int state, char **messages);

enum { K_BOOL = 1, K_STRING, K_INT, K_NUMBER, K_ENUM, K_OBJECT, K_LIST };
enum { D_NONE = 0, D_CONST, D_LIST, D_DICT, D_CLONE };
enum { E_MARKER = 0, E_BOOL, E_ENUM, E_STRING, E_INT, E_NUMBER, E_ANY, E_TEST };
enum { L_LENGTH = 0, L_SCALARS, L_EMPTY_ROWS, L_ROWS };

/* ------------------------------------------------------------------ programs */

typedef struct Spec Spec;

/* an object's keys (fields' names and aliases) -> index, as its lookup dict maps them, in an
 * open-addressed table: a fact's key is found by identity or by hash and text, with no dict
 * machinery or int conversion per key */
typedef struct {
    PyObject *key; /* borrowed from the lookup dict, which the Spec holds */
    Py_hash_t hash;
    Py_ssize_t at;
} KeyEntry;

typedef struct {
    PyObject *name; /* the field's own name */
    Spec *spec;
    int required;
    int dkind;
    PyObject *dval;
    Py_ssize_t req_if; /* the field whose true value makes this one required, or -1 */
} Field;

struct Spec {
    int kind;
    int nullable;
    PyObject *values; /* enum: frozenset */
    Py_ssize_t nfields;
    Field *fields;
    PyObject *lookup; /* object: a field's name -> its index, an alias -> its field's index + nfields */
    KeyEntry *keys;   /* the same, as a table of kmask + 1 entries */
    Py_ssize_t kmask;
    Spec *item;       /* list */
    PyObject **vals;  /* object: the values being validated (then kept, see validate_object) */
    char *changed;    /* object: which of them differ from the fact's */
    int record;       /* object: not inside a list, so the projection reads its vals */
};

typedef struct {
    PyObject *prefix; /* ',"key":' (str) */
    PyObject *path;   /* tuple of str */
    int enc;
    PyObject *extra; /* enum: value -> whole item text; test: the function */
    Spec *owner;     /* the object whose validated values hold it (see resolve), or NULL */
    Py_ssize_t field;
} Slot;

typedef struct {
    PyObject *len_prefix; /* or NULL */
    PyObject *key_prefix; /* or NULL */
    PyObject *path;
    Spec *owner; /* as a slot's */
    Py_ssize_t field;
    int mode;
    int scalar_rows;
    Py_ssize_t nslots;
    Slot *slots;
} ListOp;

static void spec_free(Spec *s) {
    if (!s) return;
    Py_XDECREF(s->values);
    Py_XDECREF(s->lookup);
    for (Py_ssize_t i = 0; i < s->nfields; i++) {
        if (s->vals) Py_XDECREF(s->vals[i]);
        Py_XDECREF(s->fields[i].name);
        Py_XDECREF(s->fields[i].dval);
        spec_free(s->fields[i].spec);
    }
    PyMem_Free(s->fields);
    PyMem_Free(s->keys);
    PyMem_Free(s->vals);
    PyMem_Free(s->changed);
    spec_free(s->item);
    PyMem_Free(s);
}

static int keys_build(Spec *s) {
    Py_ssize_t cap = 8;
    while (cap < 2 * PyDict_GET_SIZE(s->lookup) + 2) cap *= 2;
    if (!(s->keys = PyMem_Calloc(cap, sizeof(KeyEntry)))) {
        PyErr_NoMemory();
        return -1;
    }
    s->kmask = cap - 1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(s->lookup, &pos, &k, &v)) {
        Py_ssize_t at = PyLong_Check(v) ? PyLong_AsSsize_t(v) : -1;
        Py_hash_t h = PyUnicode_CheckExact(k) ? PyObject_Hash(k) : -1;
        if (at < 0 || h == -1) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "schema program: lookup is str -> index");
            return -1;
        }
        Py_ssize_t i = (size_t)h & s->kmask;
        while (s->keys[i].key) i = (i + 1) & s->kmask;
        s->keys[i] = (KeyEntry){k, h, at};
    }
    return 0;
}

/* The lookup index of the exact str ``k`` (see Spec.lookup), -1 if it is not a key there, -2
 * on error. */
static Py_ssize_t key_index(Spec *s, PyObject *k) {
    Py_hash_t h = PyObject_Hash(k); /* cached in the str */
    if (h == -1) return -2;
    Py_ssize_t n = PyUnicode_GET_LENGTH(k);
    int kind = PyUnicode_KIND(k);
    for (Py_ssize_t i = (size_t)h & s->kmask;; i = (i + 1) & s->kmask) {
        KeyEntry *e = &s->keys[i];
        if (!e->key) return -1;
        if (e->key == k) return e->at;
        if (e->hash == h && PyUnicode_GET_LENGTH(e->key) == n && PyUnicode_KIND(e->key) == kind &&
            memcmp(PyUnicode_DATA(e->key), PyUnicode_DATA(k), (size_t)n * kind) == 0)
            return e->at;
    }
}

/* (kind, nullable, values, fields, lookup, item); a field: (name, spec, required, dkind, dval, req_if) */
static Spec *spec_parse(PyObject *t, int depth, int in_list) {
    int kind, nullable;
    PyObject *values, *fields, *lookup, *item;
    if (depth > 64) {
        PyErr_SetString(PyExc_ValueError, "schema program nested too deep");
        return NULL;
    }
    if (!PyArg_ParseTuple(t, "iiOOOO", &kind, &nullable, &values, &fields, &lookup, &item)) return NULL;
    Spec *s = PyMem_Calloc(1, sizeof(Spec));
    if (!s) return (Spec *)PyErr_NoMemory();
    s->kind = kind;
    s->nullable = nullable;
    s->record = !in_list;
    if (kind == K_ENUM) {
        if (!PyFrozenSet_Check(values)) {
            PyErr_SetString(PyExc_TypeError, "enum values: a frozenset");
            goto fail;
        }
        s->values = Py_NewRef(values);
    }
    if (kind == K_OBJECT) {
        if (!PyTuple_Check(fields) || !PyDict_CheckExact(lookup)) {
            PyErr_SetString(PyExc_TypeError, "object fields: a tuple, and its lookup a dict");
            goto fail;
        }
        s->lookup = Py_NewRef(lookup);
        s->nfields = PyTuple_GET_SIZE(fields);
        if (keys_build(s) < 0) goto fail;
        s->fields = PyMem_Calloc(s->nfields ? s->nfields : 1, sizeof(Field));
        s->vals = PyMem_Calloc(s->nfields ? s->nfields : 1, sizeof(PyObject *));
        s->changed = PyMem_Calloc(s->nfields ? s->nfields : 1, 1);
        if (!s->fields || !s->vals || !s->changed) {
            s->nfields = 0;
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < s->nfields; i++) {
            Field *f = &s->fields[i];
            PyObject *name, *sub, *dval;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, i), "UOiiOn", &name, &sub, &f->required, &f->dkind, &dval,
                                  &f->req_if))
                goto fail;
            f->name = Py_NewRef(name);
            f->dval = Py_NewRef(dval);
            if (f->req_if >= s->nfields) {
                PyErr_SetString(PyExc_ValueError, "req_if out of range");
                goto fail;
            }
            if (!(f->spec = spec_parse(sub, depth + 1, in_list))) goto fail;
        }
    }
    if (kind == K_LIST && !(s->item = spec_parse(item, depth + 1, 1))) goto fail;
    if (kind < K_BOOL || kind > K_LIST) {
        PyErr_SetString(PyExc_ValueError, "unknown kind");
        goto fail;
    }
    return s;
fail:
    spec_free(s);
    return NULL;
}

static void slots_free(Slot *slots, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_XDECREF(slots[i].prefix);
        Py_XDECREF(slots[i].path);
        Py_XDECREF(slots[i].extra);
    }
    PyMem_Free(slots);
}

/* a tuple of (prefix, path, enc, extra) */
static Slot *slots_parse(PyObject *t, Py_ssize_t *n) {
    if (!PyTuple_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "slots: a tuple");
        return NULL;
    }
    *n = PyTuple_GET_SIZE(t);
    Slot *out = PyMem_Calloc(*n ? *n : 1, sizeof(Slot));
    if (!out) return (Slot *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *prefix, *path, *extra;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(t, i), "UO!iO", &prefix, &PyTuple_Type, &path, &out[i].enc, &extra)) {
            slots_free(out, i);
            return NULL;
        }
        out[i].prefix = Py_NewRef(prefix);
        out[i].path = Py_NewRef(path);
        out[i].extra = Py_NewRef(extra);
    }
    return out;
}

/* ------------------------------------------------------------------ validation */

#define OK 0
#define BAIL 1
#define ERR (-1)

static int validate(Spec *s, PyObject *v, PyObject **out, PyObject *clone, long long safe);

static int null_or_bail(Spec *s, PyObject *v, PyObject **out) {
    if (v == Py_None && s->nullable) {
        *out = Py_NewRef(v);
        return OK;
    }
    return BAIL;
}

static PyObject *make_default(Field *f, PyObject *clone) {
    switch (f->dkind) {
    case D_CONST: return Py_NewRef(f->dval);
    case D_LIST: return PyList_New(0);
    case D_DICT: return PyDict_New();
    default: return PyObject_CallOneArg(clone, f->dval);
    }
}

/* Drop the values an object's validation holds. */
static void forget_values(Spec *s) {
    for (Py_ssize_t i = 0; i < s->nfields; i++) Py_CLEAR(s->vals[i]);
}

/* A recorded object given its default (a fresh copy of the compiler's normalised default: the
 * fields' own names, their own defaults in): its values kept as if it had been validated, so
 * the projection reads what the Python projector reads below it (str keys: no Python code). */
static int remember_default(Spec *s, PyObject *d) {
    if (s->kind != K_OBJECT || !s->record || !PyDict_CheckExact(d)) return 0;
    forget_values(s);
    for (Py_ssize_t i = 0; i < s->nfields; i++) {
        PyObject *v = PyDict_GetItemWithError(d, s->fields[i].name);
        if (!v) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        s->vals[i] = Py_NewRef(v);
        if (remember_default(s->fields[i].spec, v) < 0) return -1;
    }
    return 0;
}

/* An object, read key by key: each key looked up among the fields' names and aliases (so no
 * key of the fact is ever compared by Python code), each value validated into ``s->vals``,
 * then defaults filled, required fields and required_if checked. The result is the object
 * itself when nothing changed, a copy with the changed values when only values changed, and
 * a new object with the fields' own names when an alias or (at the fact's top level, listed
 * in ``unknown``) an unknown key was used. A field given twice, or an unknown key below the
 * top level, is left to the Python path. ``s->vals`` keeps the validated values of an object
 * the projection reads (``s->record``: not inside a list) until forget_values; any other
 * object's are dropped on return. With ``out`` NULL (for such an object only) the result is
 * not made: the caller reads ``s->vals``. */
static int validate_object(Spec *s, PyObject *d, PyObject **out, PyObject *clone, long long safe,
                           PyObject *unknown) {
    if (!PyDict_CheckExact(d)) return null_or_bail(s, d, out);
    PyObject **vals = s->vals, *k, *v, *res = NULL;
    char *changed = s->changed;
    int r = OK, renamed = 0, any_change = 0;
    Py_ssize_t pos = 0;
    forget_values(s);
    memset(changed, 0, s->nfields ? s->nfields : 1);
    Py_INCREF(d); /* held while it is walked */
    while (r == OK && PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) { /* a key that could run code when compared */
            r = BAIL;
            break;
        }
        Py_ssize_t at = key_index(s, k);
        if (at == -2) {
            r = ERR;
            break;
        }
        if (at == -1) {
            r = !unknown ? BAIL : PyList_Append(unknown, k) < 0 ? ERR : OK;
            renamed = 1;
            continue;
        }
        if (at >= 2 * s->nfields) {
            PyErr_SetString(PyExc_ValueError, "schema program: a lookup index out of range");
            r = ERR;
            break;
        }
        if (at >= s->nfields) { /* an alias */
            at -= s->nfields;
            renamed = 1;
        }
        Field *f = &s->fields[at];
        if (vals[at]) { /* given twice: under its name and an alias */
            r = BAIL;
            break;
        }
        PyObject *nv;
        Py_INCREF(v);
        r = validate(f->spec, v, &nv, clone, safe);
        if (r == OK) {
            vals[at] = nv;
            if (nv != v) changed[at] = any_change = 1;
        }
        Py_DECREF(v);
    }
    for (Py_ssize_t i = 0; r == OK && i < s->nfields; i++) {
        Field *f = &s->fields[i];
        if (vals[i]) continue;
        if (f->dkind == D_NONE) {
            if (f->required) r = BAIL;
            continue;
        }
        if (!(vals[i] = make_default(f, clone)) || remember_default(f->spec, vals[i]) < 0) r = ERR;
        changed[i] = any_change = 1;
    }
    for (Py_ssize_t i = 0; r == OK && i < s->nfields; i++) {
        Field *f = &s->fields[i];
        if (f->req_if < 0 || vals[f->req_if] != Py_True) continue;
        PyObject *x = vals[i];
        if (!x || x == Py_None || (PyUnicode_CheckExact(x) && PyUnicode_GET_LENGTH(x) == 0)) r = BAIL;
    }
    if (r == OK && !out) {
        /* the caller reads s->vals */
    } else if (r == OK && !renamed && !any_change) {
        res = Py_NewRef(d);
    } else if (r == OK) {
        res = renamed ? PyDict_New() : PyDict_Copy(d);
        for (Py_ssize_t i = 0; res && i < s->nfields; i++) {
            if (vals[i] && (renamed || changed[i]) && PyDict_SetItem(res, s->fields[i].name, vals[i]) < 0) Py_CLEAR(res);
        }
        if (!res) r = ERR;
    }
    Py_DECREF(d);
    if (r != OK || !s->record) forget_values(s);
    if (r != OK) return r;
    if (out) *out = res;
    return OK;
}

static int validate_list(Spec *s, PyObject *v, PyObject **out, PyObject *clone, long long safe) {
    if (!PyList_CheckExact(v)) return null_or_bail(s, v, out);
    PyObject *copy = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *x = PyList_GET_ITEM(v, i), *nx;
        Py_INCREF(x);
        int r = validate(s->item, x, &nx, clone, safe);
        if (r != OK) {
            Py_DECREF(x);
            Py_XDECREF(copy);
            return r;
        }
        if (nx != x) {
            if (!copy && !(copy = PyList_GetSlice(v, 0, PyList_GET_SIZE(v)))) r = ERR;
            if (r == OK && i < PyList_GET_SIZE(copy)) {
                PyObject *old = PyList_GET_ITEM(copy, i); /* x, unless the list changed under us */
                PyList_SET_ITEM(copy, i, nx);               /* steals nx */
                nx = NULL;
                if (old != x) r = BAIL;                     /* changed under us: let Python decide */
                Py_DECREF(old);                             /* the copy's reference */
            }
        }
        Py_XDECREF(nx);
        Py_DECREF(x);
        if (r != OK) {
            Py_XDECREF(copy);
            return r;
        }
    }
    if (copy && PyList_GET_SIZE(copy) != PyList_GET_SIZE(v)) { /* changed under us: let Python decide */
        Py_DECREF(copy);
        return BAIL;
    }
    *out = copy ? copy : Py_NewRef(v);
    return OK;
}

static int validate(Spec *s, PyObject *v, PyObject **out, PyObject *clone, long long safe) {
    switch (s->kind) {
    case K_BOOL:
        if (v != Py_True && v != Py_False) return null_or_bail(s, v, out);
        break;
    case K_STRING:
        if (!PyUnicode_CheckExact(v)) return null_or_bail(s, v, out);
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(v) < 0) return ERR;
#endif
        if (!PyUnicode_IS_ASCII(v) || memchr(PyUnicode_DATA(v), 0, PyUnicode_GET_LENGTH(v))) return BAIL;
        break;
    case K_INT:
    case K_NUMBER:
        if (PyLong_CheckExact(v)) {
            int overflow;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (x == -1 && PyErr_Occurred()) return ERR;
            if (overflow || x < -safe || x > safe) return BAIL;
        } else if (!(s->kind == K_NUMBER && PyFloat_CheckExact(v) && isfinite(PyFloat_AS_DOUBLE(v)))) {
            return null_or_bail(s, v, out);
        }
        break;
    case K_ENUM: {
        if (!PyUnicode_CheckExact(v)) return null_or_bail(s, v, out);
        int r = PySet_Contains(s->values, v);
        if (r < 0) return ERR;
        if (r == 0) return BAIL;
        break;
    }
    case K_OBJECT: return validate_object(s, v, out, clone, safe, NULL);
    case K_LIST: return validate_list(s, v, out, clone, safe);
    default: return BAIL;
    }
    *out = Py_NewRef(v);
    return OK;
}

/* ------------------------------------------------------------------ projection */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    int wide; /* a non-ASCII character written */
} Writer;

static int grow(Writer *w, Py_ssize_t more) {
    if (w->len + more <= w->cap) return 0;
    Py_ssize_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + more) cap *= 2;
    char *b = PyMem_Realloc(w->buf, cap);
    if (!b) {
        PyErr_NoMemory();
        return -1;
    }
    w->buf = b;
    w->cap = cap;
    return 0;
}

static int put(Writer *w, const char *s, Py_ssize_t n) {
    if (grow(w, n) < 0) return -1;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    return 0;
}

#define PUTS(w, lit) put((w), (lit), (Py_ssize_t)sizeof(lit) - 1)

static int put_str(Writer *w, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return -1;
    if (!PyUnicode_IS_ASCII(s)) w->wide = 1;
    return put(w, u, n);
}

/* the text written so far, as a str */
static PyObject *writer_text(Writer *w, Py_ssize_t from) {
    if (w->wide) return PyUnicode_DecodeUTF8(w->buf + from, w->len - from, "strict");
    PyObject *t = PyUnicode_New(w->len - from, 127);
    if (t) memcpy(PyUnicode_DATA(t), w->buf + from, w->len - from);
    return t;
}

static int put_ll(Writer *w, long long x) {
    char tmp[24], *p = tmp + sizeof tmp;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do *--p = (char)('0' + u % 10); while (u /= 10);
    if (x < 0) *--p = '-';
    return put(w, p, tmp + sizeof tmp - p);
}

/* an ASCII string as json.encoder.encode_basestring writes it */
static int put_json_string(Writer *w, PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const unsigned char *p = PyUnicode_DATA(s);
    if (grow(w, 6 * n + 2) < 0) return -1;
    char *o = w->buf + w->len;
    *o++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = "0123456789abcdef"[c >> 4];
            *o++ = "0123456789abcdef"[c & 15];
        }
    }
    *o++ = '"';
    w->len = o - w->buf;
    return 0;
}

typedef struct {
    PyObject *encode;  /* stoprule.engine.encode */
    PyObject *encode_float;
} Encoders;

static int put_any(Writer *w, PyObject *v, Encoders *e) {
    if (v == Py_None) return PUTS(w, "null");
    PyObject *t = PyObject_CallOneArg(e->encode, v);
    if (!t) return -1;
    int r = PyUnicode_Check(t) ? put_str(w, t) : (PyErr_SetString(PyExc_TypeError, "encode: not a str"), -1);
    Py_DECREF(t);
    return r;
}

/* the value at ``path`` below ``cur`` (a new reference), or NULL when a step is missing; each
 * step is held while the next is looked up (a key's __eq__ can run Python code) */
static PyObject *lookup(PyObject *cur, PyObject *path, int *err) {
    Py_ssize_t n = PyTuple_GET_SIZE(path);
    Py_INCREF(cur);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *next = PyDict_CheckExact(cur) ? PyDict_GetItemWithError(cur, PyTuple_GET_ITEM(path, i)) : NULL;
        Py_XINCREF(next);
        Py_DECREF(cur);
        if (!next) {
            *err = PyErr_Occurred() != NULL;
            return NULL;
        }
        cur = next;
    }
    return cur;
}

static int emit_slot(Writer *w, Slot *s, PyObject *v, Encoders *e) {
    switch (s->enc) {
    case E_MARKER:
        if (put_str(w, s->prefix) < 0) return -1;
        return v == Py_None ? PUTS(w, "null") : PUTS(w, "true");
    case E_BOOL:
        if (put_str(w, s->prefix) < 0) return -1;
        return v == Py_True ? PUTS(w, "true") : v == Py_False ? PUTS(w, "false") : put_any(w, v, e);
    case E_ENUM:
        if (PyUnicode_CheckExact(v)) {
            PyObject *t = PyDict_GetItemWithError(s->extra, v);
            if (t) return put_str(w, t);
            if (PyErr_Occurred()) return -1;
        }
        return put_str(w, s->prefix) < 0 ? -1 : put_any(w, v, e);
    case E_STRING:
        if (put_str(w, s->prefix) < 0) return -1;
        if (PyUnicode_CheckExact(v) && PyUnicode_IS_ASCII(v)) return put_json_string(w, v);
        return put_any(w, v, e);
    case E_INT:
    case E_NUMBER:
        if (put_str(w, s->prefix) < 0) return -1;
        if (PyLong_CheckExact(v)) {
            int overflow;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (x == -1 && PyErr_Occurred()) return -1;
            if (!overflow) return put_ll(w, x);
        }
        if (s->enc == E_NUMBER && PyFloat_CheckExact(v)) {
            PyObject *t = PyObject_CallOneArg(e->encode_float, v);
            if (!t) return -1;
            int r = put_str(w, t);
            Py_DECREF(t);
            return r;
        }
        return put_any(w, v, e);
    case E_TEST: {
        if (!PyUnicode_CheckExact(v)) return 0; /* left out for a value that is not a string */
        PyObject *x = PyObject_CallOneArg(s->extra, v);
        if (!x) return -1;
        int r = put_str(w, s->prefix);
        if (r == 0) r = x == Py_True ? PUTS(w, "true") : x == Py_False ? PUTS(w, "false") : put_any(w, x, e);
        Py_DECREF(x);
        return r;
    }
    default:
        return put_str(w, s->prefix) < 0 ? -1 : put_any(w, v, e);
    }
}

/* The value a slot or list reads: from its owner's validated values, or looked up on its path
 * below ``scope`` (a new reference, or NULL: missing, or an error if ``*err``) */
static PyObject *slot_value(Spec *owner, Py_ssize_t field, PyObject *scope, PyObject *path, int *err) {
    if (owner) return Py_XNewRef(owner->vals[field]);
    return lookup(scope, path, err);
}

static int emit_slots(Writer *w, Slot *slots, Py_ssize_t n, PyObject *scope, Encoders *e) {
    for (Py_ssize_t i = 0; i < n; i++) {
        int err = 0;
        PyObject *v = slot_value(slots[i].owner, slots[i].field, scope, slots[i].path, &err);
        if (err) return -1;
        if (!v) continue; /* v: a new reference (a test or an encoder runs Python code) */
        int r = emit_slot(w, &slots[i], v, e);
        Py_DECREF(v);
        if (r < 0) return -1;
    }
    return 0;
}

static int emit_list(Writer *w, ListOp *op, PyObject *data, Encoders *e) {
    int err = 0;
    PyObject *seq = slot_value(op->owner, op->field, data, op->path, &err);
    if (err) return -1;
    if (!seq || !PyList_CheckExact(seq)) {
        Py_XDECREF(seq);
        return op->len_prefix ? (put_str(w, op->len_prefix) < 0 ? -1 : PUTS(w, "0")) : 0;
    }
    int r = 0;
    Py_ssize_t n = PyList_GET_SIZE(seq);
    if (op->len_prefix) r = put_str(w, op->len_prefix) < 0 || put_ll(w, n) < 0 ? -1 : 0;
    if (r == 0 && op->key_prefix && op->mode != L_LENGTH) {
        r = put_str(w, op->key_prefix);
        if (r == 0 && op->mode == L_SCALARS) {
            r = put_any(w, seq, e);
        } else if (r == 0) {
            r = PUTS(w, "[");
            for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(seq); i++) {
                if (i) r = PUTS(w, ",");
                if (r == 0) r = PUTS(w, "{");
                Py_ssize_t start = w->len;
                PyObject *item = PyList_GET_ITEM(seq, i);
                if (r == 0 && op->mode == L_ROWS && (op->scalar_rows || PyDict_CheckExact(item))) {
                    Py_INCREF(item);
                    r = emit_slots(w, op->slots, op->nslots, item, e);
                    Py_DECREF(item);
                    if (r == 0 && w->len > start) { /* drop the first item's comma */
                        memmove(w->buf + start, w->buf + start + 1, w->len - start - 1);
                        w->len--;
                    }
                }
                if (r == 0) r = PUTS(w, "}");
            }
            if (r == 0) r = PUTS(w, "]");
        }
    }
    Py_DECREF(seq);
    return r;
}

/* ------------------------------------------------------------------ the runner */

typedef struct {
    PyObject_HEAD
    Spec *schema;
    Slot *slots;
    Py_ssize_t nslots;
    ListOp *lists;
    Py_ssize_t nlists;
    PyObject *handles; /* tuple of ints */
    unsigned int *hs;  /* the same, as the engine takes them */
    Py_ssize_t nhs;
    assert_fn assert_fact, retract_fact;
    start_fn start_action;
    next_fn next_action;
    PyObject *clone;
    Encoders enc;
    PyObject *show_one, *sep; /* an object in a message (templates._show_one); ", " */
    PyObject *ranked; /* the rules in winner order: (bit, match, prototype verdict, fills) (see decide) */
    PyObject *stops;  /* the high-risk stops in order: (bit, id) */
    Py_ssize_t matched_at, high_risk_at, warnings_at; /* places in a verdict */
    PyObject *warn;   /* unknown top-level keys -> the verdict's warnings */
    PyObject *warned; /* dict: tuple of unknown keys -> their warnings (copied for each verdict) */
    PyObject *unknown;
    PyObject *keep;   /* kept alive with the runner (the handles' owner) */
    long long safe;
    unsigned long long next_id;
    int base[128];  /* bit of rule "<letter>0", or -1 */
    int count[128]; /* rules named "<letter>N" */
    Py_ssize_t nwords;
    uint64_t *mask, *always;
    Py_ssize_t *rank_bits, *stop_bits; /* each ranked rule's and stop's bit */
    int need_data; /* a top-level slot or list is not among the kept values (see resolve) */
    Spec **recorded; /* the objects whose validated values the projection reads */
    Py_ssize_t nrecorded;
    Writer w;
    int busy;
} Runner;

static int runner_traverse(Runner *r, visitproc visit, void *arg) {
    Py_VISIT(r->handles);
    Py_VISIT(r->clone);
    Py_VISIT(r->enc.encode);
    Py_VISIT(r->enc.encode_float);
    Py_VISIT(r->show_one);
    Py_VISIT(r->sep);
    Py_VISIT(r->ranked);
    Py_VISIT(r->stops);
    Py_VISIT(r->warn);
    Py_VISIT(r->warned);
    Py_VISIT(r->unknown);
    Py_VISIT(r->keep);
    return 0;
}

static int runner_clear(Runner *r) {
    Py_CLEAR(r->handles);
    Py_CLEAR(r->clone);
    Py_CLEAR(r->enc.encode);
    Py_CLEAR(r->enc.encode_float);
    Py_CLEAR(r->show_one);
    Py_CLEAR(r->sep);
    Py_CLEAR(r->ranked);
    Py_CLEAR(r->stops);
    Py_CLEAR(r->warn);
    Py_CLEAR(r->warned);
    Py_CLEAR(r->unknown);
    Py_CLEAR(r->keep);
    return 0;
}

static void runner_dealloc(Runner *r) {
    PyObject_GC_UnTrack(r);
    runner_clear(r);
    spec_free(r->schema);
    slots_free(r->slots, r->nslots);
    for (Py_ssize_t i = 0; i < r->nlists; i++) {
        Py_XDECREF(r->lists[i].len_prefix);
        Py_XDECREF(r->lists[i].key_prefix);
        Py_XDECREF(r->lists[i].path);
        slots_free(r->lists[i].slots, r->lists[i].nslots);
    }
    PyMem_Free(r->lists);
    PyMem_Free(r->hs);
    PyMem_Free(r->recorded);
    PyMem_Free(r->rank_bits);
    PyMem_Free(r->stop_bits);
    PyMem_Free(r->mask);
    PyMem_Free(r->always);
    PyMem_Free(r->w.buf);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* The recorded object and field whose validated value is the one at ``path`` from the fact's
 * top (into ``*owner``, ``*field``); ``*owner`` stays NULL where the path leaves the recorded
 * objects (the value is then looked up). -1 on error. */
static int resolve(Spec *root, PyObject *path, Spec **owner, Py_ssize_t *field) {
    Spec *s = root;
    Py_ssize_t n = PyTuple_GET_SIZE(path);
    *owner = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!s || s->kind != K_OBJECT || !s->record) return 0;
        Py_ssize_t j = 0;
        for (; j < s->nfields; j++) {
            int eq = PyObject_RichCompareBool(s->fields[j].name, PyTuple_GET_ITEM(path, i), Py_EQ);
            if (eq < 0) return -1;
            if (eq) break;
        }
        if (j == s->nfields) return 0;
        if (i == n - 1) {
            *owner = s;
            *field = j;
        }
        s = s->fields[j].spec;
    }
    return 0;
}

static int collect_recorded(Runner *r, Spec *s) {
    if (s->kind != K_OBJECT || !s->record) return 0;
    Spec **more = PyMem_Realloc(r->recorded, (r->nrecorded + 1) * sizeof(Spec *));
    if (!more) {
        PyErr_NoMemory();
        return -1;
    }
    r->recorded = more;
    r->recorded[r->nrecorded++] = s;
    for (Py_ssize_t i = 0; i < s->nfields; i++)
        if (collect_recorded(r, s->fields[i].spec) < 0) return -1;
    return 0;
}

/* Top-level slots and lists read the validated values where they can (see resolve). */
static int resolve_all(Runner *r) {
    if (collect_recorded(r, r->schema) < 0) return -1;
    for (Py_ssize_t i = 0; i < r->nslots; i++) {
        if (resolve(r->schema, r->slots[i].path, &r->slots[i].owner, &r->slots[i].field) < 0) return -1;
        r->need_data |= !r->slots[i].owner;
    }
    for (Py_ssize_t i = 0; i < r->nlists; i++) {
        if (resolve(r->schema, r->lists[i].path, &r->lists[i].owner, &r->lists[i].field) < 0) return -1;
        r->need_data |= !r->lists[i].owner;
    }
    return 0;
}

static int parse_lists(Runner *r, PyObject *lists) {
    if (!PyTuple_Check(lists)) {
        PyErr_SetString(PyExc_TypeError, "lists: a tuple");
        return -1;
    }
    r->lists = PyMem_Calloc(PyTuple_GET_SIZE(lists) + 1, sizeof(ListOp));
    if (!r->lists) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lists); i++) {
        ListOp *op = &r->lists[i];
        PyObject *lp, *kp, *path, *slots;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(lists, i), "OOO!iiO", &lp, &kp, &PyTuple_Type, &path, &op->mode,
                              &op->scalar_rows, &slots))
            return -1;
        r->nlists = i + 1;
        op->len_prefix = lp == Py_None ? NULL : Py_NewRef(lp);
        op->key_prefix = kp == Py_None ? NULL : Py_NewRef(kp);
        op->path = Py_NewRef(path);
        if ((op->len_prefix && !PyUnicode_Check(op->len_prefix)) || (op->key_prefix && !PyUnicode_Check(op->key_prefix))) {
            PyErr_SetString(PyExc_TypeError, "list prefixes: str or None");
            return -1;
        }
        if (!(op->slots = slots_parse(slots, &op->nslots))) return -1;
    }
    return 0;
}

/* The first item (a bit below ``nbits``) of each of the ``size``-tuples in ``t`` */
static Py_ssize_t *parse_bits(PyObject *t, Py_ssize_t size, Py_ssize_t nbits, const char *what) {
    Py_ssize_t n = PyTuple_GET_SIZE(t), *bits = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    if (!bits) return (Py_ssize_t *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        bits[i] = PyTuple_CheckExact(x) && PyTuple_GET_SIZE(x) == size ? PyLong_AsSsize_t(PyTuple_GET_ITEM(x, 0)) : -1;
        if (bits[i] < 0 || bits[i] >= nbits) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, what);
            PyMem_Free(bits);
            return NULL;
        }
    }
    return bits;
}

/* Each ranked rule's prototype verdict (a tuple with room for the places) and fills ``(index in
 * the verdict, message program)``, each program's parts a str or ``(path tuple, str)``: checked
 * once here, so that deciding a fact need not. */
static int check_ranked(Runner *r) {
    Py_ssize_t last = r->matched_at > r->high_risk_at ? r->matched_at : r->high_risk_at;
    last = last > r->warnings_at ? last : r->warnings_at;
    if (r->matched_at < 0 || r->high_risk_at < 0 || r->warnings_at < 0) goto bad;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->ranked); i++) {
        PyObject *entry = PyTuple_GET_ITEM(r->ranked, i), *proto = PyTuple_GET_ITEM(entry, 2);
        PyObject *fills = PyTuple_GET_ITEM(entry, 3);
        if (!PyTuple_Check(proto) || PyTuple_GET_SIZE(proto) <= last || !PyTuple_CheckExact(fills)) goto bad;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fills); j++) {
            PyObject *fill = PyTuple_GET_ITEM(fills, j), *program;
            if (!PyTuple_CheckExact(fill) || PyTuple_GET_SIZE(fill) != 2 || !PyLong_Check(PyTuple_GET_ITEM(fill, 0)) ||
                !PyTuple_CheckExact(program = PyTuple_GET_ITEM(fill, 1)))
                goto bad;
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(fill, 0));
            if (at < 0 || at >= PyTuple_GET_SIZE(proto)) goto bad;
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(program); k++) {
                PyObject *part = PyTuple_GET_ITEM(program, k);
                if (PyUnicode_CheckExact(part)) continue;
                if (!PyTuple_CheckExact(part) || PyTuple_GET_SIZE(part) != 2 || !PyTuple_CheckExact(PyTuple_GET_ITEM(part, 0)) ||
                    !PyUnicode_Check(PyTuple_GET_ITEM(part, 1)))
                    goto bad;
            }
        }
    }
    return 0;
bad:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "ranked: (bit, match, prototype verdict with room for the places, fills "
                                          "((index, (str or (path, str when empty), ...)), ...))");
    return -1;
}

/* Runner(schema, slots, lists, handles, (assert, start, next, retract), (clone, encode, encode_float, show_one),
 *        names, always, ranked, stops, (matched at, high-risk stop at, warnings at), warn, keep, safe) */
static int find_engine(Runner *r, PyObject *path);

static PyObject *runner_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *schema, *slots, *lists, *handles, *names, *always, *ranked, *stops, *warn, *keep;
    PyObject *engine_path, *clone, *encode, *encode_float, *show;
    long long safe;
    Py_ssize_t r_matched_at, r_high_risk_at, r_warnings_at;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "Runner takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!O!O!U(OOOO)O!O!O!O!(nnn)OOL", &schema, &PyTuple_Type, &slots, &PyTuple_Type,
                          &lists, &PyTuple_Type, &handles, &engine_path,
                          &clone, &encode, &encode_float, &show, &PyDict_Type, &names, &PyTuple_Type, &always, &PyTuple_Type, &ranked,
                          &PyTuple_Type, &stops, &r_matched_at, &r_high_risk_at, &r_warnings_at, &warn, &keep, &safe))
        return NULL;
    Runner *r = (Runner *)type->tp_alloc(type, 0);
    if (!r) return NULL;
    r->handles = Py_NewRef(handles);
    if (find_engine(r, engine_path) < 0) goto fail;
    r->clone = Py_NewRef(clone);
    r->enc.encode = Py_NewRef(encode);
    r->enc.encode_float = Py_NewRef(encode_float);
    r->show_one = Py_NewRef(show);
    r->ranked = Py_NewRef(ranked);
    r->stops = Py_NewRef(stops);
    r->matched_at = r_matched_at;
    r->high_risk_at = r_high_risk_at;
    r->warnings_at = r_warnings_at;
    r->warn = Py_NewRef(warn);
    if (!(r->unknown = PyList_New(0)) || !(r->warned = PyDict_New()) || !(r->sep = PyUnicode_FromString(", ")))
        goto fail;
    r->keep = Py_NewRef(keep);
    r->safe = safe;
    if (!(r->schema = spec_parse(schema, 0, 0))) goto fail;
    if (r->schema->kind != K_OBJECT) {
        PyErr_SetString(PyExc_ValueError, "the schema program is not an object");
        goto fail;
    }
    if (!(r->slots = slots_parse(slots, &r->nslots))) goto fail;
    if (parse_lists(r, lists) < 0 || resolve_all(r) < 0) goto fail;
    /* names: {letter: (first bit, count)} for rules named "<letter><number>" */
    for (int i = 0; i < 128; i++) r->base[i] = -1;
    Py_ssize_t pos = 0, nbits = 0;
    PyObject *k, *v;
    while (PyDict_Next(names, &pos, &k, &v)) {
        int first, count;
        if (!PyUnicode_Check(k) || PyUnicode_GET_LENGTH(k) != 1 || PyUnicode_READ_CHAR(k, 0) >= 128 ||
            !PyArg_ParseTuple(v, "ii", &first, &count) || first < 0 || count < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "names: {letter: (first, count)}");
            goto fail;
        }
        Py_UCS4 c = PyUnicode_READ_CHAR(k, 0);
        r->base[c] = first;
        r->count[c] = count;
        if (first + count > nbits) nbits = first + count;
    }
    r->nwords = nbits / 64 + 1;
    r->mask = PyMem_Calloc(r->nwords, sizeof(uint64_t));
    r->always = PyMem_Calloc(r->nwords, sizeof(uint64_t));
    if (!r->mask || !r->always) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(always); i++) {
        Py_ssize_t bit = PyLong_AsSsize_t(PyTuple_GET_ITEM(always, i));
        if (bit < 0 || bit >= nbits) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "always: a bit out of range");
            goto fail;
        }
        r->always[bit / 64] |= 1ULL << (bit % 64);
    }
    if (!(r->rank_bits = parse_bits(ranked, 4, nbits, "ranked: (bit, match, prototype, fills)")) ||
        !(r->stop_bits = parse_bits(stops, 2, nbits, "stops: (bit, id)")) || check_ranked(r) < 0)
        goto fail;
    return (PyObject *)r; /* tp_alloc has it tracked */
fail:
    Py_DECREF(r);
    return NULL;
}

static int note_action(Runner *r, const char *s) {
    if (!s) {
        PyErr_SetString(PyExc_RuntimeError, "the engine gave an action without text");
        return -1;
    }
    /* {"r3":{"m":{...}}}: the rule name is the first key */
    if (s[0] == '{' && s[1] == '"' && s[2] && (unsigned char)s[2] < 128 && r->base[(unsigned char)s[2]] >= 0) {
        int c = (unsigned char)s[2];
        long num = 0;
        Py_ssize_t i = 3;
        for (; s[i] >= '0' && s[i] <= '9' && num < 1000000; i++) num = num * 10 + (s[i] - '0');
        if (i > 3 && s[i] == '"' && num < r->count[c]) {
            long bit = r->base[c] + num;
            r->mask[bit / 64] |= 1ULL << (bit % 64);
            return 0;
        }
    }
    PyErr_Format(PyExc_RuntimeError, "unexpected action from the engine: %.80s", s);
    return -1;
}

#define ENGINE_ERROR (-2) /* the engine failed on this fact: left to the Python path */

/* assert the text into one ruleset, drain its actions into the mask, retract by id: 0, -1 (a
 * Python error) or ENGINE_ERROR (an engine error code, e.g. one of its limits met: the fact is
 * retracted and left to the Python path, which decides it by the reference interpreter). */
static int match_one(Runner *r, unsigned int h, char *text, char *retract) {
    unsigned int state, ignored;
    unsigned int res = r->assert_fact(h, text, &state);
    if (res != RULES_OK) {
        if (res <= ERR_EVENT_DEFERRED) return 0; /* matched no rule: not stored */
        r->retract_fact(h, retract, &ignored);   /* in case part of it was stored */
        return ENGINE_ERROR;
    }
    int rc = 0;
    char *state_fact = NULL, *messages = NULL;
    res = r->start_action(h, state, &state_fact, &messages);
    if (res == RULES_OK) {
        rc = note_action(r, messages);
        while (rc == 0) {
            res = r->next_action(h, state, &messages);
            if (res != RULES_OK) break;
            rc = note_action(r, messages);
        }
    }
    if (rc == 0 && res != RULES_OK && res != ERR_NO_ACTION_AVAILABLE) rc = ENGINE_ERROR;
    res = r->retract_fact(h, retract, &ignored); /* whatever happened */
    if (rc == 0 && res > ERR_EVENT_DEFERRED) rc = ENGINE_ERROR;
    return rc;
}

/* The engine's API from the loaded engine module at ``path``, and the handles as it takes them. */
static int find_engine(Runner *r, PyObject *path) {
    const char *file = PyUnicode_AsUTF8(path);
    if (!file) return -1;
    void *lib = dlopen(file, RTLD_NOW | RTLD_NOLOAD); /* already loaded: only a reference */
    if (!lib) {
        PyErr_Format(PyExc_ImportError, "the engine module is not loaded: %s", file);
        return -1;
    }
    r->assert_fact = (assert_fn)dlsym(lib, "assertFact");
    r->retract_fact = (assert_fn)dlsym(lib, "retractFact");
    r->start_action = (start_fn)dlsym(lib, "startActionForState");
    r->next_action = (next_fn)dlsym(lib, "completeAndStartAction");
    dlclose(lib); /* the module keeps it loaded */
    if (!r->assert_fact || !r->retract_fact || !r->start_action || !r->next_action) {
        PyErr_Format(PyExc_ImportError, "the engine module does not export its C API: %s", file);
        return -1;
    }
    r->nhs = PyTuple_GET_SIZE(r->handles);
    if (!(r->hs = PyMem_Calloc(r->nhs ? r->nhs : 1, sizeof(unsigned int)))) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < r->nhs; i++) {
        unsigned long h = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(r->handles, i));
        if (h == (unsigned long)-1 && PyErr_Occurred()) return -1;
        if (h > 0xFFFFFFFFUL) {
            PyErr_SetString(PyExc_ValueError, "a ruleset handle out of range");
            return -1;
        }
        r->hs[i] = (unsigned int)h;
    }
    return 0;
}

/* A value in a message, as templates._show_one writes it: a str as itself, a bool as true or
 * false, a number as str() does, a list's items (bar nulls) joined with ", "; anything else
 * (an object) by ``show_one``. */
static PyObject *show_one(Runner *r, PyObject *v, int depth) {
    if (PyUnicode_CheckExact(v)) return Py_NewRef(v);
    if (PyBool_Check(v)) return PyUnicode_FromString(v == Py_True ? "true" : "false");
    if (PyLong_CheckExact(v) || PyFloat_CheckExact(v)) return PyObject_Str(v);
    if (!PyList_CheckExact(v) || depth > 32) return PyObject_CallOneArg(r->show_one, v);
    PyObject *items = PyList_New(0), *out = NULL;
    if (!items) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *x = Py_NewRef(PyList_GET_ITEM(v, i)), *t = x == Py_None ? NULL : show_one(r, x, depth + 1);
        int bad = x != Py_None && (!t || PyList_Append(items, t) < 0);
        Py_DECREF(x);
        Py_XDECREF(t);
        if (bad) goto done;
    }
    out = PyUnicode_Join(r->sep, items);
done:
    Py_DECREF(items);
    return out;
}

/* ``v`` shown and appended to ``items``, unless it is None */
static int append_shown(Runner *r, PyObject *items, PyObject *v) {
    if (v == Py_None) return 0;
    PyObject *t = show_one(r, v, 0);
    int rc = t ? PyList_Append(items, t) : -1;
    Py_XDECREF(t);
    return rc;
}

static PyObject *find(Runner *r, PyObject *cur, PyObject *path, Py_ssize_t at);

/* The values ``path[at:]`` finds in each item of ``seq`` (bar nulls, lists flattened), shown and
 * joined with ", "; None if that text is empty (templates._lookup's ``or None``) or ``seq`` is not a list. */
static PyObject *find_in_items(Runner *r, PyObject *seq, PyObject *path, Py_ssize_t at) {
    if (!PyList_Check(seq)) return Py_NewRef(Py_None);
    PyObject *items = PyList_New(0), *out = NULL;
    for (Py_ssize_t j = 0; items && j < PyList_GET_SIZE(seq); j++) {
        PyObject *x = Py_NewRef(PyList_GET_ITEM(seq, j));
        PyObject *y = at < PyTuple_GET_SIZE(path) ? find(r, x, path, at) : Py_NewRef(x);
        Py_DECREF(x);
        int rc = y ? 0 : -1;
        if (y && PyList_Check(y)) {
            for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(y); k++) {
                PyObject *z = Py_NewRef(PyList_GET_ITEM(y, k));
                rc = append_shown(r, items, z);
                Py_DECREF(z);
            }
        } else if (y) {
            rc = append_shown(r, items, y);
        }
        Py_XDECREF(y);
        if (rc < 0) Py_CLEAR(items);
    }
    if (!items) return NULL;
    out = PyUnicode_Join(r->sep, items);
    Py_DECREF(items);
    if (out && PyUnicode_GET_LENGTH(out) == 0) /* as templates._lookup: ", ".join(...) or None */
        Py_SETREF(out, Py_NewRef(Py_None));
    return out;
}

/* The value of ``key`` in ``cur`` (a new reference; None where it is missing or ``cur`` is not
 * an object). ``cur`` NULL: the fact's validated top level, read from the values take kept. */
static PyObject *child(Runner *r, PyObject *cur, PyObject *key) {
    PyObject *v = NULL;
    if (!cur) {
        Spec *root = r->schema;
        Py_ssize_t at = PyUnicode_CheckExact(key) ? key_index(root, key) : -1;
        if (at == -2) return NULL;
        if (at >= 0 && at < root->nfields) v = root->vals[at]; /* an alias is no key of the validated fact */
    } else if (PyDict_Check(cur)) {
        v = PyDict_GetItemWithError(cur, key);
        if (!v && PyErr_Occurred()) return NULL;
    }
    return Py_NewRef(v ? v : Py_None);
}

/* The value on ``path[at:]`` below ``cur`` (a new reference; ``cur`` as child takes it), as
 * templates._lookup finds it: None where a step meets something that is not an object; a
 * step ``(name,)`` takes the items of the list ``name`` (see find_in_items). */
static PyObject *find(Runner *r, PyObject *cur, PyObject *path, Py_ssize_t at) {
    Py_XINCREF(cur);
    for (Py_ssize_t i = at; i < PyTuple_GET_SIZE(path); i++) {
        PyObject *step = PyTuple_GET_ITEM(path, i);
        int listed = PyTuple_Check(step) && PyTuple_GET_SIZE(step) == 1;
        PyObject *next = child(r, cur, listed ? PyTuple_GET_ITEM(step, 0) : step);
        Py_XDECREF(cur);
        if (!next) return NULL;
        cur = next;
        if (listed) {
            PyObject *out = find_in_items(r, cur, path, i + 1);
            Py_DECREF(cur);
            return out;
        }
    }
    return cur ? cur : Py_NewRef(Py_None);
}

/* A message's field ``(path, shown when empty)`` (a path as find takes it): a non-empty str as
 * itself, None, "" or [] as the text given, anything else as show_one writes it; the rules of
 * the generated Python renderer (templates.compile_templates). */
static PyObject *render_field(Runner *r, PyObject *part, PyObject *data) {
    PyObject *empty = PyTuple_GET_ITEM(part, 1); /* the shape: see check_ranked */
    PyObject *v = find(r, data, PyTuple_GET_ITEM(part, 0), 0), *out;
    if (!v) return NULL;
    if (v == Py_None || (PyUnicode_Check(v) && PyUnicode_GET_LENGTH(v) == 0) || (PyList_Check(v) && PyList_GET_SIZE(v) == 0))
        out = Py_NewRef(empty);
    else
        out = show_one(r, v, 0);
    Py_DECREF(v);
    return out;
}

/* A message from its program: a tuple of literal strs and fields (see render_field). */
static PyObject *render(Runner *r, PyObject *program, PyObject *data) {
    Py_ssize_t n = PyTuple_GET_SIZE(program), got = 0, total = 0;
    PyObject *small[16], **pieces = n <= 16 ? small : PyMem_Malloc(n * sizeof(PyObject *)), *out = NULL;
    if (!pieces) return PyErr_NoMemory();
    int ascii = 1;
    for (; got < n; got++) {
        PyObject *part = PyTuple_GET_ITEM(program, got);
        PyObject *piece = PyUnicode_CheckExact(part) ? Py_NewRef(part) : render_field(r, part, data);
        if (!piece) goto done;
        if (!PyUnicode_Check(piece)) {
            Py_DECREF(piece);
            PyErr_SetString(PyExc_TypeError, "a message's part is not a str");
            goto done;
        }
        pieces[got] = piece;
        total += PyUnicode_GET_LENGTH(piece);
        ascii &= PyUnicode_IS_ASCII(piece) != 0;
    }
    if (ascii) {
        if ((out = PyUnicode_New(total, 127))) {
            char *o = PyUnicode_DATA(out);
            for (Py_ssize_t i = 0; i < n; i++) {
                memcpy(o, PyUnicode_DATA(pieces[i]), PyUnicode_GET_LENGTH(pieces[i]));
                o += PyUnicode_GET_LENGTH(pieces[i]);
            }
        }
    } else {
        PyObject *seq = PyTuple_New(n);
        if (seq) {
            for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(seq, i, Py_NewRef(pieces[i]));
            PyObject *empty = PyUnicode_New(0, 0);
            out = empty ? PyUnicode_Join(empty, seq) : NULL;
            Py_XDECREF(empty);
            Py_DECREF(seq);
        }
    }
done:
    for (Py_ssize_t i = 0; i < got; i++) Py_DECREF(pieces[i]);
    if (pieces != small) PyMem_Free(pieces);
    return out;
}

/* The warnings for the unknown keys in ``r->unknown``: worded once by ``warn`` for each set of
 * keys, then copied (each verdict gets dicts of its own). */
static PyObject *warnings_for(Runner *r) {
    PyObject *key = PyList_AsTuple(r->unknown), *out = NULL;
    if (!key) return NULL;
    PyObject *worded = PyDict_GetItemWithError(r->warned, key);
    if (worded) {
        Py_INCREF(worded);
    } else if (!PyErr_Occurred() && (worded = PyObject_CallOneArg(r->warn, r->unknown))) {
        if (!PyTuple_CheckExact(worded)) {
            PyErr_SetString(PyExc_TypeError, "warn: not a tuple");
            Py_CLEAR(worded);
        } else {
            if (PyDict_GET_SIZE(r->warned) >= 4096) PyDict_Clear(r->warned); /* the key sets are few; bound them */
            if (PyDict_SetItem(r->warned, key, worded) < 0) Py_CLEAR(worded);
        }
    }
    Py_DECREF(key);
    if (!worded) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(worded);
    if ((out = PyTuple_New(n))) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PyTuple_GET_ITEM(worded, i);
            PyObject *copy = PyDict_CheckExact(x) ? PyDict_Copy(x) : Py_NewRef(x);
            if (!copy) {
                Py_CLEAR(out);
                break;
            }
            PyTuple_SET_ITEM(out, i, copy);
        }
    }
    Py_DECREF(worded);
    return out;
}

#define HAS(r, bit) ((r)->mask[(bit) / 64] >> ((bit) % 64) & 1)

/* The verdict for the rules in ``r->mask``: the winner's prototype (``ranked``: the first rule
 * matched in winner order) with every matched rule's match (in that order), the first high-risk
 * stop matched, the winner's messages rendered and the warnings put in. None if no rule
 * matched (the Python path raises NoRuleMatched). */
static PyObject *decide(Runner *r, PyObject *data, PyObject *warnings) {
    Py_ssize_t nranked = PyTuple_GET_SIZE(r->ranked), win = -1, count = 0;
    for (Py_ssize_t i = 0; i < nranked; i++) {
        if (!HAS(r, r->rank_bits[i])) continue;
        if (win < 0) win = i;
        count++;
    }
    if (win < 0) Py_RETURN_NONE;
    PyObject *entry = PyTuple_GET_ITEM(r->ranked, win), *proto = PyTuple_GET_ITEM(entry, 2);
    PyObject *fills = PyTuple_GET_ITEM(entry, 3), *high = Py_None;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->stops); i++) {
        if (HAS(r, r->stop_bits[i])) {
            high = PyTuple_GET_ITEM(PyTuple_GET_ITEM(r->stops, i), 1);
            break;
        }
    }
    Py_ssize_t n = PyTuple_GET_SIZE(proto);
    PyObject *matched = PyTuple_New(count);
    if (!matched) return NULL;
    for (Py_ssize_t i = win, at = 0; at < count; i++) {
        if (HAS(r, r->rank_bits[i])) PyTuple_SET_ITEM(matched, at++, Py_NewRef(PyTuple_GET_ITEM(PyTuple_GET_ITEM(r->ranked, i), 1)));
    }
    PyTypeObject *tp = Py_TYPE(proto);
    PyObject *out = tp == &PyTuple_Type ? PyTuple_New(n) : tp->tp_alloc(tp, n);
    if (!out) {
        Py_DECREF(matched);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = i == r->matched_at ? matched : i == r->high_risk_at ? high
                      : i == r->warnings_at && warnings ? warnings : PyTuple_GET_ITEM(proto, i);
        PyTuple_SET_ITEM(out, i, Py_NewRef(v));
    }
    Py_DECREF(matched);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fills); i++) {
        PyObject *fill = PyTuple_GET_ITEM(fills, i), *v;
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(fill, 0)); /* in range: see check_ranked */
        if (!(v = render(r, PyTuple_GET_ITEM(fill, 1), data))) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject *old = PyTuple_GET_ITEM(out, at);
        PyTuple_SET_ITEM(out, at, v);
        Py_DECREF(old);
    }
    return out;
}

static void forget(Runner *r) {
    for (Py_ssize_t i = 0; i < r->nrecorded; i++) forget_values(r->recorded[i]);
}

/* The fact validated, its unknown top-level keys into ``r->unknown``: OK, BAIL (left to Python)
 * or ERR. On OK the validated values are kept (the projection and the messages read them) until
 * forget(r), and the validated fact is made into ``*data`` unless ``data`` is NULL. */
static int take(Runner *r, PyObject *fact, PyObject **data) {
    if (!r->unknown || !PyDict_CheckExact(fact) || PyDict_GET_SIZE(fact) == 0) return BAIL;
    Py_ssize_t n = PyList_GET_SIZE(r->unknown);
    if (n && PyList_SetSlice(r->unknown, 0, n, NULL) < 0) return ERR;
    forget(r);
    int v = validate_object(r->schema, fact, data, r->clone, r->safe, r->unknown);
    if (v != OK) forget(r);
    return v;
}

/* The projection appended to ``w``, from "_":1 to the closing brace: the values take kept, and
 * the validated fact ``data`` (NULL unless r->need_data) for a slot that is not among them. */
static int write_projection(Runner *r, Writer *w, PyObject *data) {
    int rc = PUTS(w, "\"_\":1") < 0 || emit_slots(w, r->slots, r->nslots, data, &r->enc) < 0 ? -1 : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < r->nlists; i++) rc = emit_list(w, &r->lists[i], data, &r->enc);
    return rc == 0 ? PUTS(w, "}") : rc;
}

/* run(fact) -> the verdict for this fact, or None: left to the Python path */
static PyObject *runner_run(Runner *r, PyObject *fact) {
    if (r->busy) Py_RETURN_NONE;
    r->busy = 1;
    PyObject *data = NULL, *result = NULL;
    int v = take(r, fact, r->need_data ? &data : NULL); /* the kept values serve otherwise */
    if (v != OK) {
        r->busy = 0;
        if (v == ERR) return NULL;
        Py_RETURN_NONE;
    }
    Writer *w = &r->w;
    w->len = 0;
    w->wide = 0;
    /* an id unique among the facts on these handles at once: each is retracted before the next
     * goes in (by this runner or the thread's Python matcher), so short ids can cycle. (Matching
     * on the same handles from inside a match, e.g. from a gc callback, is not supported either
     * way: the engine keeps one action queue per handle.) */
    r->next_id = (r->next_id + 1) % 100000;
    char retract[32];
    if (PUTS(w, "{\"id\":") < 0 || put_ll(w, (long long)r->next_id) < 0) goto done;
    Py_ssize_t id_end = w->len; /* the retract text is {"id":N} */
    memcpy(retract, w->buf, id_end);
    retract[id_end] = '}';
    retract[id_end + 1] = 0;
    if (PUTS(w, ",") < 0 || write_projection(r, w, data) < 0 || PUTS(w, "\0") < 0) goto done;
    memcpy(r->mask, r->always, r->nwords * sizeof(uint64_t));
    for (Py_ssize_t i = 0; i < r->nhs; i++) {
        int rc = match_one(r, r->hs[i], w->buf, retract);
        if (rc == ENGINE_ERROR) { /* the Python path decides this fact (by the reference interpreter) */
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (rc < 0) goto done;
    }
    PyObject *warnings = PyList_GET_SIZE(r->unknown) ? warnings_for(r) : NULL;
    if (warnings || !PyErr_Occurred()) result = decide(r, data, warnings);
    Py_XDECREF(warnings);
done:
    r->busy = 0;
    forget(r);
    Py_XDECREF(data);
    return result;
}

/* project(fact) -> the projection text the engine would be given (no id), or None */
static PyObject *runner_project(Runner *r, PyObject *fact) {
    if (r->busy) Py_RETURN_NONE;
    r->busy = 1;
    PyObject *data = NULL, *out = NULL;
    int v = take(r, fact, &data); /* unknown keys: not projected */
    if (v != OK) {
        r->busy = 0;
        if (v == ERR) return NULL;
        Py_RETURN_NONE;
    }
    Writer w = {0};
    int rc = write_projection(r, &w, data);
    forget(r);
    r->busy = 0;
    if (rc == 0) {
        PyObject *text = writer_text(&w, 0);
        out = text ? PyTuple_Pack(2, data, text) : NULL;
        Py_XDECREF(text);
    }
    PyMem_Free(w.buf);
    Py_DECREF(data);
    return out;
}

static PyMethodDef runner_methods[] = {
    {"run", (PyCFunction)runner_run, METH_O, "run(fact) -> the verdict, or None (left to Python)"},
    {"project", (PyCFunction)runner_project, METH_O,
     "project(fact) -> (validated data, projection text without its opening brace), or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "stoprule.engine._speedups.Runner",
    .tp_basicsize = sizeof(Runner),
    .tp_dealloc = (destructor)runner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One thread's fact runner over one compiled pack (see stoprule/engine/speedups.py).",
    .tp_traverse = (traverseproc)runner_traverse,
    .tp_clear = (inquiry)runner_clear,
    .tp_methods = runner_methods,
    .tp_new = runner_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "stoprule.engine._speedups", "stoprule's optional accelerator (see stoprule/engine/speedups.py).", -1, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    if (PyType_Ready(&RunnerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&RunnerType);
    if (PyModule_AddObject(m, "Runner", (PyObject *)&RunnerType) < 0 || PyModule_AddIntConstant(m, "FORMAT", FORMAT) < 0) {
        Py_DECREF(&RunnerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
