// Package api holds the plans and catalog wire types, events and method
// declarations (DESIGN §8). cli and ui import it as planapi.
package api
