// claims → replication: two results files of one study, row by row
// (`zerolayer claims A.h5 --replicate B.h5`; docs/studies.md#replication).
// Both files are judged by the same registry and options; each row then says
// whether the two intervals overlap, whether the verdicts agree, and one
// reading of the pair:
//   agree              the same decision (the Holm verdict where the row has
//                      one, else the plain verdict);
//   near the boundary  the decisions differ, but the intervals overlap or one
//                      of them holds a boundary of the claimed region: one run
//                      was itself a hair from the other decision;
//   differ             the decisions differ and neither explains it: the two
//                      runs sit apart, each clear of the boundary;
//   one file only      the row has a result in one file alone.
#pragma once
#include <string>
#include <vector>

#include "sim/claims/scaling.h"

namespace zl {

struct ReplicatedRow {
  std::string id;                   // claim id, "size/id" where a file has several sizes
  const ClaimResult* a = nullptr;   // nullptr: not in that file
  const ClaimResult* b = nullptr;
  bool overlap = false;             // both intervals finite and overlapping
  bool plain_agree = false;         // the plain verdicts are equal
  bool agree = false;               // the decisions (Holm where present) are equal
  std::string reading;              // agree | near the boundary | differ | one file only
};

// The decision a row's table states: its Holm verdict where it has one.
std::string decision(const ClaimResult& r);

// Row by row, in A's order, then B's rows A lacks. The rows point into `a`
// and `b`, which must outlive them.
std::vector<ReplicatedRow> replicate(const std::vector<SizedClaims>& a, const std::vector<SizedClaims>& b);
// Temporaries would leave the rows pointing at nothing.
std::vector<ReplicatedRow> replicate(std::vector<SizedClaims>&& a, const std::vector<SizedClaims>& b) = delete;
std::vector<ReplicatedRow> replicate(const std::vector<SizedClaims>& a, std::vector<SizedClaims>&& b) = delete;
std::vector<ReplicatedRow> replicate(std::vector<SizedClaims>&& a, std::vector<SizedClaims>&& b) = delete;

// Per row both values, intervals and verdicts, overlap, agreement and the
// reading; then the summary line (counts of each reading).
std::string format_replication(const std::vector<ReplicatedRow>& rows, const std::string& a_name,
                               const std::string& b_name);

}  // namespace zl
