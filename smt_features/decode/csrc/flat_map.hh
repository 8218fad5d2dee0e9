// Small open-addressing hash maps for the compiled search core (smt_features/csrc/search.cpp).
//
// Keys map to non-negative int32 values (indices into side arrays); -1 marks an empty slot.
// No deletion, only clear(); linear probing over a power-of-two table kept at most half full.
#ifndef SMT_FEATURES_CSRC_FLAT_MAP_HH
#define SMT_FEATURES_CSRC_FLAT_MAP_HH

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace smtsearch {

// splitmix64's finaliser: a cheap, well-mixing 64-bit hash.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

struct U64Hash {
  uint64_t operator()(uint64_t k) const { return mix64(k); }
};

template <class Key, class Hash>
class FlatMap {
 public:
  explicit FlatMap(std::size_t initial = 16) { Reset(initial); }

  // Pointer to the value of key, or nullptr.
  int32_t *Find(const Key &key) {
    std::size_t i = hash_(key) & mask_;
    while (true) {
      Slot &s = slots_[i];
      if (s.val < 0) return nullptr;
      if (s.key == key) return &s.val;
      i = (i + 1) & mask_;
    }
  }

  // Insert a key known to be absent.
  void Insert(const Key &key, int32_t value) {
    if ((count_ + 1) * 2 > slots_.size()) Grow();
    Place(key, value);
    ++count_;
  }

  void Clear() {
    if (count_ == 0) return;
    if (slots_.size() > 4 * kMinSize && count_ * 8 < slots_.size()) {
      Reset(slots_.size() / 4);
    } else {
      for (Slot &s : slots_) s.val = -1;
    }
    count_ = 0;
  }

  std::size_t size() const { return count_; }

 private:
  static constexpr std::size_t kMinSize = 16;

  struct Slot {  // key and value side by side: one cache line per probe
    Key key;
    int32_t val;
  };

  void Reset(std::size_t n) {
    std::size_t cap = kMinSize;
    while (cap < n) cap <<= 1;
    slots_.assign(cap, Slot{Key(), -1});
    mask_ = cap - 1;
    count_ = 0;
  }

  void Place(const Key &key, int32_t value) {
    std::size_t i = hash_(key) & mask_;
    while (slots_[i].val >= 0) i = (i + 1) & mask_;
    slots_[i].key = key;
    slots_[i].val = value;
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    std::size_t cap = old.size() * 2;
    slots_.assign(cap, Slot{Key(), -1});
    mask_ = cap - 1;
    for (const Slot &s : old)
      if (s.val >= 0) Place(s.key, s.val);
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
  Hash hash_;
};

}  // namespace smtsearch

#endif  // SMT_FEATURES_CSRC_FLAT_MAP_HH
