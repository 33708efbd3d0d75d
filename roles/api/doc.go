// Package api holds the roles feature's wire types and method declarations: role
// templates and history (DESIGN §12). cli and ui import it as roleapi.
package api
