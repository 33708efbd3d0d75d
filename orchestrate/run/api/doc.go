// Package api holds the orchestration runs' wire types, events and method
// declarations (DESIGN §8 "Run"). cli and ui import it as runapi.
package api
