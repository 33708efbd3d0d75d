// Package run owns orchestration runs (DESIGN §8 "Run" to "Durability"): the run
// record and its per-milestone state machine (a pure function of the run and one new
// fact, Step), the run's append-only event log in the store, the git side (feature and
// milestone branches, worktrees, checks, the squash merge by compare-and-swap), the
// reviewer's output parser, and the restart re-derivation that checks the stored run
// against the git refs.
//
// Step does no I/O: every side effect is an Action the caller performs after the fact
// and the new run are stored, and every outcome of an action comes back as a Fact. So
// the autopilot is safe to kill at any point, and the machine is tested exhaustively
// without agents, git or a clock.
package run
