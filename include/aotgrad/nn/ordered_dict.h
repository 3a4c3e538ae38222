// nn::OrderedDict: what LibTorch's Module::named_parameters(), named_buffers(), named_children()
// and named_modules() return — entries in insertion order, looked up by key or by position.
//
// Each entry is an Item with key() / value() (LibTorch's spelling) and the public members
// first / second, so `for (const auto& [name, t] : m.named_parameters())` works as it did when
// these returned a vector of pairs; the dict also converts to that vector.
// Thread-safety: none (a value type).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace aotgrad::nn {

template <typename Key, typename Value>
class OrderedDict {
 public:
  struct Item {
    Key first;
    Value second;
    const Key& key() const { return first; }
    Value& value() { return second; }
    const Value& value() const { return second; }
    std::pair<Key, Value> pair() const { return {first, second}; }
    Value* operator->() { return &second; }
    const Value* operator->() const { return &second; }
  };

  OrderedDict() = default;
  // `key_description` names what a key is in error messages ("parameter", "submodule").
  explicit OrderedDict(std::string key_description)
      : key_description_(std::move(key_description)) {}

  // Throws if `key` is already present, as LibTorch's insert does.
  Value& insert(Key key, Value value) {
    if (find(key)) throw std::invalid_argument(key_description_ + " '" + key + "' already defined");
    items_.push_back(Item{std::move(key), std::move(value)});
    return items_.back().second;
  }

  Value* find(const Key& key) {
    for (Item& item : items_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  const Value* find(const Key& key) const {
    for (const Item& item : items_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  bool contains(const Key& key) const { return find(key) != nullptr; }

  Value& operator[](const Key& key) { return at_key(key); }
  const Value& operator[](const Key& key) const {
    return const_cast<OrderedDict*>(this)->at_key(key);
  }
  Item& operator[](size_t index) { return at_index(index); }
  const Item& operator[](size_t index) const {
    return const_cast<OrderedDict*>(this)->at_index(index);
  }
  // Without these, dict[0] would be ambiguous between the index and a const char* key.
  Item& operator[](int index) { return at_index(static_cast<size_t>(index)); }
  const Item& operator[](int index) const { return (*this)[static_cast<size_t>(index)]; }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  bool empty() const { return items_.empty(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.second);
    return out;
  }
  std::vector<std::pair<Key, Value>> pairs() const {
    std::vector<std::pair<Key, Value>> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.emplace_back(item.first, item.second);
    return out;
  }
  operator std::vector<std::pair<Key, Value>>() const { return pairs(); }

  typename std::vector<Item>::iterator begin() { return items_.begin(); }
  typename std::vector<Item>::iterator end() { return items_.end(); }
  typename std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<Item>::const_iterator end() const { return items_.end(); }
  Item& front() { return at_index(0); }
  Item& back() { return at_index(items_.size() - 1); }

 private:
  Value& at_key(const Key& key) {
    if (Value* v = find(key)) return *v;
    throw std::out_of_range(key_description_ + " '" + key + "' is not defined");
  }
  Item& at_index(size_t index) {
    if (index >= items_.size())
      throw std::out_of_range("OrderedDict: index " + std::to_string(index) +
                              " is out of range for " + std::to_string(items_.size()) + " " +
                              key_description_ + "s");
    return items_[index];
  }

  std::string key_description_ = "key";
  std::vector<Item> items_;
};

}  // namespace aotgrad::nn
