// Package api holds the listeners feature's wire types, events and method
// declarations (DESIGN §11). cli and ui import it as listenapi.
package api
