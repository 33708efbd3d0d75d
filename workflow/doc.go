// Package workflow owns workflows (DESIGN §18): multi-step programs of agents with
// typed outputs, read from .orcr/workflows/NAME.toml (or $XDG_CONFIG_HOME/orcr/
// workflows/) by the strict loader, and run durably inside the server.
//
// Where things are:
//
//   - def.go: the file, its checks (unknown keys, bad expressions, references to
//     undeclared vars, steps or outputs, cycles — all refused before anything
//     starts) and where files are found;
//   - expr.go: expressions (when, for_each; github.com/expr-lang/expr, bounded) and
//     templates ({{vars.x}}, {{steps.a.b}}, {{item}}, as roles write them);
//   - output.go: a step's output checked against its declared types;
//   - machine.go: the run's pure Step(run, fact) → (run, actions);
//   - service.go, feature.go, methods.go: the feature that starts runs, performs
//     Step's actions through the kernel (agents are ordinary agents: the queue, caps,
//     accounts and roles apply) and feeds back what the agents did.
//
// Durability is internal/outbox's: every fact is logged before Step sees it, every
// action is stored as intent with the step's result and confirmed by a "did" entry
// after. A restarted server performs what is still in the outbox; a spawn performed
// again finds the agent at its path (workflows/RUN/STEP[/I]) and takes it instead of
// starting another, so no step is started twice.
package workflow
