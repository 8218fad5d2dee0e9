// Python bindings of MERT's compiled line search (sweep.hh; smt_features/tune/kernel.py is its face,
// smt_features/tune/envelope.py the reference it reproduces bit for bit).
//
// sweep() returns the γ intervals that may win a line search with their summed BLEU statistics and bounds:
// BLEU itself is left to numpy (its log/exp may differ from libm's in the last bit), the kernel keeps the
// intervals whose libm BLEU is within `margin` of the best valid one, and the caller evaluates those with
// bleu_from_stats and picks exactly as the reference does. sort_rows() gives sweep() its rows
// sorted by (sentence, slope); segment_argmax() is pool.PoolArrays.one_best's selection (the first row of
// each sentence's highest score).
//
// Built by third_party/build_mert.sh with -ffp-contract=off (no fused multiply-add). Plain CPython C API
// and the buffer protocol: no numpy headers.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sweep.hh"

namespace {

using mertk::NUM_STATS;
using mertk::Plan;
using mertk::PlanBytes;
// ------------------------------------------------------------------ buffers

struct Buf {
  Py_buffer view;
  bool ok = false;
  ~Buf() {
    if (ok) PyBuffer_Release(&view);
  }
  // a C-contiguous buffer of float64 ('d'), int64 ('q'), int32 ('i') or uint8 ('B') items
  bool Get(PyObject *obj, char kind, const char *name) {
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return false;
    ok = true;
    const char *f = view.format ? view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') ++f;
    bool good;
    const char *what;
    switch (kind) {
      case 'd': good = view.itemsize == 8 && !std::strcmp(f, "d"); what = "float64"; break;
      case 'q': good = view.itemsize == 8 && (!std::strcmp(f, "l") || !std::strcmp(f, "q")); what = "int64"; break;
      case 'i': good = view.itemsize == 4 && (!std::strcmp(f, "i") || !std::strcmp(f, "l")); what = "int32"; break;
      default: good = view.itemsize == 1 && (!std::strcmp(f, "B") || !std::strcmp(f, "?")); what = "uint8"; break;
    }
    if (!good) {
      PyErr_Format(PyExc_TypeError, "%s must be a contiguous %s array", name, what);
      return false;
    }
    return true;
  }
  Py_ssize_t Len() const { return view.len / view.itemsize; }
  const double *D() const { return static_cast<const double *>(view.buf); }
  const int64_t *I() const { return static_cast<const int64_t *>(view.buf); }
  const int32_t *I32() const { return static_cast<const int32_t *>(view.buf); }
  const uint8_t *U8() const { return static_cast<const uint8_t *>(view.buf); }
};

template <class T>
PyObject *ToBytes(const std::vector<T> &v) {
  return PyBytes_FromStringAndSize(reinterpret_cast<const char *>(v.data()), (Py_ssize_t)(v.size() * sizeof(T)));
}

thread_local mertk::Work W;  // reused between calls

bool CheckOffsets(const Buf &offsets, int64_t n) {
  const int64_t S = offsets.Len() - 1;
  if (S < 0 || offsets.I()[0] != 0 || offsets.I()[S] != n) {
    PyErr_SetString(PyExc_ValueError, "offsets must run from 0 to the number of rows");
    return false;
  }
  for (int64_t s = 0; s < S; ++s)
    if (offsets.I()[s + 1] < offsets.I()[s]) {
      PyErr_SetString(PyExc_ValueError, "offsets must not decrease");
      return false;
    }
  return true;
}

// sweep(a, plan, offsets, stats, lo, hi, min_interval, margin)
//   -> (num_intervals, empty_range, idx int64 bytes, cum float64 bytes (k x 9), cl bytes, cr bytes)
// plan: the rows sorted by (sentence, slope), as sort_rows returns it
PyObject *py_sweep(PyObject *, PyObject *args) {
  PyObject *oa, *op, *ooff, *ost;
  double lo, hi, min_interval, margin;
  if (!PyArg_ParseTuple(args, "OOOOdddd", &oa, &op, &ooff, &ost, &lo, &hi, &min_interval, &margin)) return nullptr;
  Buf a, plan, offsets, stats;
  if (!a.Get(oa, 'd', "a") || !plan.Get(op, 'B', "plan") || !offsets.Get(ooff, 'q', "offsets") ||
      !stats.Get(ost, 'd', "stats"))
    return nullptr;
  const int64_t n = a.Len();
  if ((std::size_t)plan.Len() != PlanBytes(n, offsets.Len() - 1) || stats.Len() != n * NUM_STATS) {
    PyErr_SetString(PyExc_ValueError, "a, plan and stats (n x 9) must have the same number of rows");
    return nullptr;
  }
  if (!CheckOffsets(offsets, n)) return nullptr;
  mertk::SweepOut out;
  int failed = 0;
  Py_BEGIN_ALLOW_THREADS;
  try {
    Sweep(W, a.D(), Plan(plan.view.buf, n), offsets.I(), offsets.Len() - 1, stats.D(), lo, hi, min_interval, margin,
          out);
  } catch (const std::invalid_argument &) {
    failed = 1;
  } catch (...) {
    failed = 2;
  }
  Py_END_ALLOW_THREADS;
  if (failed == 1) {
    PyErr_SetString(PyExc_ValueError, "the plan must list each sentence's own rows");
    return nullptr;
  }
  if (failed) return PyErr_NoMemory();
  return Py_BuildValue("(LON NNN)", (long long)out.num_intervals, out.empty_range ? Py_True : Py_False,
                       ToBytes(out.idx), ToBytes(out.cum), ToBytes(out.cl), ToBytes(out.cr));
}

// the plan (sweep.hh) of each sentence's rows in `order` (sorted by slope)
void FillPlan(const int64_t *order, const double *bv, const int64_t *off, int64_t S, std::vector<char> &buf) {
  const int64_t N = off[S];
  buf.assign(PlanBytes(N, S), 0);
  const Plan view(buf.data(), N);
  int32_t *row = const_cast<int32_t *>(view.row);
  double *b = const_cast<double *>(view.b);
  uint32_t *group = const_cast<uint32_t *>(view.group);
  int64_t *groups = const_cast<int64_t *>(view.groups);
  for (int64_t s = 0; s < S; ++s) {
    int64_t start = off[s];
    groups[s] = 0;
    for (int64_t i = off[s]; i < off[s + 1]; ++i) {
      row[i] = (int32_t)order[i];
      b[i] = bv[order[i]];
      if (i > off[s] && b[i] == b[i - 1]) {
        ++group[start];
      } else {
        start = i;
        group[i] = 1;
        ++groups[s];
      }
    }
  }
}

bool CheckRows(int64_t n) {
  if (n >= (int64_t)1 << 31) {
    PyErr_SetString(PyExc_ValueError, "more than 2^31 - 1 rows");
    return false;
  }
  return true;
}

// sort_rows(b, offsets) -> plan bytes: each sentence's rows by increasing b (ties: by row)
PyObject *py_sort_rows(PyObject *, PyObject *args) {
  PyObject *ob, *ooff;
  if (!PyArg_ParseTuple(args, "OO", &ob, &ooff)) return nullptr;
  Buf b, offsets;
  if (!b.Get(ob, 'd', "b") || !offsets.Get(ooff, 'q', "offsets")) return nullptr;
  const int64_t n = b.Len();
  if (!CheckOffsets(offsets, n) || !CheckRows(n)) return nullptr;
  std::vector<int64_t> order(n);
  std::vector<char> plan;
  const double *bv = b.D();
  const int64_t *off = offsets.I();
  const int64_t S = offsets.Len() - 1;
  Py_BEGIN_ALLOW_THREADS;
  std::vector<std::pair<double, int64_t>> keyed;  // one sentence's (slope, row), sorted in place
  for (int64_t s = 0; s < S; ++s) {
    keyed.clear();
    for (int64_t i = off[s]; i < off[s + 1]; ++i) keyed.emplace_back(bv[i], i);
    std::sort(keyed.begin(), keyed.end(), [](const std::pair<double, int64_t> &x, const std::pair<double, int64_t> &y) {
      return x.first < y.first || (!(y.first < x.first) && x.second < y.second);
    });
    for (std::size_t j = 0; j < keyed.size(); ++j) order[off[s] + (int64_t)j] = keyed[j].second;
  }
  FillPlan(order.data(), bv, off, S, plan);
  Py_END_ALLOW_THREADS;
  return ToBytes(plan);
}

// segment_argmax(scores, offsets) -> int64 bytes: per sentence the first row of its maximum
PyObject *py_segment_argmax(PyObject *, PyObject *args) {
  PyObject *osc, *ooff;
  if (!PyArg_ParseTuple(args, "OO", &osc, &ooff)) return nullptr;
  Buf sc, offsets;
  if (!sc.Get(osc, 'd', "scores") || !offsets.Get(ooff, 'q', "offsets")) return nullptr;
  const int64_t n = sc.Len();
  if (!CheckOffsets(offsets, n)) return nullptr;
  const int64_t S = offsets.Len() - 1;
  std::vector<int64_t> rows(S);
  const double *v = sc.D();
  const int64_t *off = offsets.I();
  Py_BEGIN_ALLOW_THREADS;
  for (int64_t s = 0; s < S; ++s) {
    int64_t best = off[s];
    for (int64_t i = off[s] + 1; i < off[s + 1]; ++i)
      if (v[i] > v[best]) best = i;
    rows[s] = best;
  }
  Py_END_ALLOW_THREADS;
  return ToBytes(rows);
}

PyMethodDef methods[] = {
    {"sweep", py_sweep, METH_VARARGS,
     "sweep(a, plan, offsets, stats, lo, hi, min_interval, margin) -> (intervals, empty_range, idx, "
     "cum, cl, cr): the line search's envelopes and the intervals within margin of the best BLEU"},
    {"sort_rows", py_sort_rows, METH_VARARGS, "sort_rows(b, offsets) -> plan: each sentence's rows by increasing b"},
    {"segment_argmax", py_segment_argmax, METH_VARARGS,
     "segment_argmax(scores, offsets) -> the first row of each sentence's highest score"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mert_kernel",
                      "Compiled line-search kernels of MERT (see smt_features/tune/kernel.py).", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__mert_kernel(void) {
  PyObject *m = PyModule_Create(&module);
  if (!m) return nullptr;
  if (PyModule_AddIntConstant(m, "ABI_VERSION", 1) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
