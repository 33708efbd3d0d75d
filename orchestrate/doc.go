// Package orchestrate is the plans feature of orcr's orchestration (DESIGN §8): plan
// records with their pure state machine and their store bucket, the lead's prompt
// template, and the Service that starts each plan's lead and steps the plan with what
// the lead and the file do. The model catalog and the plan file format it checks files
// against are the planning library, which runs (orchestrate/run) uses too.
//
// The daemon wires it to the kernel (core.Kernel and its agent operations), which hands
// it the feature's own buckets (Store), so the records and the state machine are
// testable without a server.
package orchestrate
