// Package orchestrate owns orcr's orchestration (DESIGN §8): the model catalog and its
// tiers, the Markdown plan a lead agent writes and a person edits (parser, validation,
// targeted edits that keep the person's text byte for byte), plan records with their
// pure state machine and their store bucket, and the lead's prompt template.
//
// It is library code: it starts no agents and reads no sockets. The daemon wires it to
// the kernel (core.Kernel and its agent operations) and hands it the real store through the small Store
// interface below, so everything here is testable without a server.
package orchestrate
