// Package api holds the accounts feature's wire types and method declarations:
// accounts, usage windows, the account choice and budgets (DESIGN §10). cli and ui
// import it as acctapi.
package api
