// Package e2e_test runs the real orcr binary with the real agent CLIs in real panes
// against the scripted model server: what a user does with `orcr agent run
// --provider claude|codex|pi`, checked through the CLI. Each test's installation is
// a testutil/rig.
package e2e_test
