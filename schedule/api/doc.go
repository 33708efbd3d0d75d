// Package api holds the schedule feature's wire types and method declarations:
// durable schedules and their runs. cli and ui import it as schedapi.
package api
