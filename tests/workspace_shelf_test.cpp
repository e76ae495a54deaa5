// The shelf of run workspaces (engines/workspace_shelf.hpp): a thread gets
// back the workspace it used last, so a workspace's hot parts never share
// cache lines with another thread's run; and the shelf keeps only a few,
// small ones.
#include "engines/workspace_shelf.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

using namespace retrystorm;

namespace {

struct Slab {
  size_t size = 0;
  int owner = 0;  // which test thread made it
  size_t entities() const { return size; }
};

// `owner`'s new slab of `size` entities.
std::unique_ptr<Slab> slab(int owner, size_t size = 1) {
  auto s = std::make_unique<Slab>();
  s->owner = owner;
  s->size = size;
  return s;
}

}  // namespace

TEST(WorkspaceShelf, AThreadGetsBackTheWorkspaceItGaveBackNotTheLatest) {
  WorkspaceShelf<Slab> shelf;
  shelf.give_back(slab(1));                               // this thread's
  std::thread([&] { shelf.give_back(slab(2)); }).join();  // another's, given back later
  EXPECT_EQ(shelf.take()->owner, 1);
  EXPECT_EQ(shelf.take()->owner, 2);  // none of its own left: the last given back
  EXPECT_EQ(shelf.take()->owner, 0);  // none at all: a new one
}

TEST(WorkspaceShelf, AThreadWithoutOneOfItsOwnTakesTheLastGivenBack) {
  WorkspaceShelf<Slab> shelf;
  shelf.give_back(slab(1));
  shelf.give_back(slab(2));
  int got = 0;
  std::thread([&] { got = shelf.take()->owner; }).join();
  EXPECT_EQ(got, 2);
  EXPECT_EQ(shelf.kept(), 1u);
}

TEST(WorkspaceShelf, KeepsOnlyAFewAndOnlyWhileSmall) {
  using Shelf = WorkspaceShelf<Slab>;
  Shelf shelf;
  for (size_t i = 0; i < Shelf::kKept + 3; ++i) shelf.give_back(slab(1));
  EXPECT_EQ(shelf.kept(), Shelf::kKept);
  Shelf roomy;
  roomy.give_back(slab(1, Shelf::kKeptEntities));  // fills the shelf's allowance
  roomy.give_back(slab(2, 1));                     // one entity too many: freed
  EXPECT_EQ(roomy.kept(), 1u);
}
