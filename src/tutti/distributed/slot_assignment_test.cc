#include "tutti/distributed/slot_assignment.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tutti {
namespace {

using ::testing::ElementsAre;

// Two slots of group 0, one of group 1.
const std::vector<int> kGroups = {0, 0, 1};

TEST(SlotAssignmentTest, EmptySlotsGoToTheEarliestJoinedMembersOfTheirGroup) {
  EXPECT_THAT(AssignSlots(kGroups, {"", "", ""}, {{"c", 0, 3}, {"x", 1, 2}, {"a", 0, 1}, {"b", 0, 2}}),
              ElementsAre("a", "b", "x"));  // c is a spare
  EXPECT_THAT(AssignSlots(kGroups, {"", "", ""}, {{"a", 0, 1}}), ElementsAre("a", "", ""));
}

TEST(SlotAssignmentTest, HoldersKeepTheirSlotsAndASpareTakesAFreedOne) {
  // b (slot 1) left: the earliest spare of group 0 takes its slot, a keeps its own.
  EXPECT_THAT(AssignSlots(kGroups, {"a", "b", "x"}, {{"d", 0, 9}, {"a", 0, 5}, {"c", 0, 7}, {"x", 1, 1}}),
              ElementsAre("a", "c", "x"));
  // A holder keeps its slot even when it joined after a spare.
  EXPECT_THAT(AssignSlots(kGroups, {"late", "", ""}, {{"early", 0, 1}, {"late", 0, 2}}),
              ElementsAre("late", "early", ""));
}

TEST(SlotAssignmentTest, TheSnapshotsOrderDoesNotMatter) {
  const std::vector<SlotMember> one = {{"a", 0, 1}, {"b", 0, 2}, {"c", 0, 3}, {"x", 1, 4}, {"y", 1, 5}};
  const std::vector<SlotMember> other = {one[4], one[2], one[0], one[3], one[1]};
  EXPECT_EQ(AssignSlots(kGroups, {"", "", ""}, one), AssignSlots(kGroups, {"", "", ""}, other));
  EXPECT_THAT(AssignSlots(kGroups, {"", "", ""}, other), ElementsAre("a", "b", "x"));
}

TEST(SlotAssignmentTest, AHolderOfAnotherGroupOrNoLongerAMemberLosesItsSlot) {
  EXPECT_THAT(AssignSlots(kGroups, {"gone", "x", ""}, {{"x", 1, 1}, {"a", 0, 2}}), ElementsAre("a", "", "x"));
}

}  // namespace
}  // namespace tutti
