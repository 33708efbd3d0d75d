// Package planning is the library of orcr's orchestration (DESIGN §8) that the plans
// feature (orchestrate) and the runs feature (orchestrate/run) both use: the model
// catalog and its tiers (the embedded catalog.toml, the user's overrides, Pick, the
// `orcr catalog` table), the Markdown plan a lead agent writes and a person edits
// (parser, validation against the catalog, targeted edits that keep the person's text
// byte for byte, order and readiness), plan names, and the line errors both report.
//
// It is pure library code: it holds no service state, starts nothing and imports no
// feature package (daemon's TestSharedLibrariesImportNoFeature), so any feature may use
// it without reaching into another. A plan's record (its state, hashes and lead) is the
// plans feature's; runs reads it through the kernel's registry.
package planning
