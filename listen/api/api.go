package api

import (
	"time"

	"orcr/core/wire"
)

// Methods of listeners (DESIGN §11).
const (
	MethodListenerList   = "listener.list"
	MethodListenerGet    = "listener.get"
	MethodListenerPut    = "listener.put"
	MethodListenerRemove = "listener.remove"
	MethodListenerEnable = "listener.enable"
)

// Events of listeners. Every one has Data["name"]; Rule is "listener.<source type>".
const (
	// EventListenerPolled: a poll that saw something new, dispatched, held events, or
	// recovered from failures. Data: seen, new, dispatched, held, nextPoll, warning.
	// (A poll with nothing new after a good one is only in the listener's state: 100
	// listeners on 10 s would otherwise write 864,000 events a day.)
	EventListenerPolled = "listener.polled"
	// EventListenerFailed: a poll or a dispatch failed. Data: error, failures, nextPoll.
	EventListenerFailed = "listener.failed"
	// EventListenerCeiling: a tick did not poll because a rate limit is full.
	// Data: held, nextPoll, limits.
	EventListenerCeiling = "listener.ceiling"
	// EventListenerDispatched: an event's action ran. Data: event, target, agentId.
	EventListenerDispatched = "listener.dispatched"
	// EventListenerLoaded, EventListenerInvalid and EventListenerRemoved follow files
	// and documents: Data has origin and, when invalid, error.
	EventListenerLoaded  = "listener.loaded"
	EventListenerInvalid = "listener.invalid"
	EventListenerRemoved = "listener.removed"
)

// Listener is one listener as the server runs it: its definition (or why it cannot
// run), and its state.
type Listener struct {
	Name   string `json:"name"`
	Origin string `json:"origin"` // "file" | "api"
	File   string `json:"file"`   // the file it was read from (origin file)
	// State is "enabled", "disabled" or "invalid" (Error says why, with the line).
	State           string   `json:"state"`
	Error           string   `json:"error"`
	Source          string   `json:"source"` // source type: shell | github-issues | …
	Repos           []string `json:"repos"`
	Command         string   `json:"command"` // shell source
	IntervalSeconds int      `json:"intervalSeconds"`
	Action          string   `json:"action"` // summary: "agent gh/{{repo}}/{{number}} (claude)"

	LastPoll  *time.Time `json:"lastPoll"`
	NextPoll  *time.Time `json:"nextPoll"`
	Fires     int        `json:"fires"`
	Held      int        `json:"held"`
	LastError string     `json:"lastError"`
	ErrorAt   *time.Time `json:"errorAt"`
	Failures  int        `json:"failures"` // consecutive failed ticks (a poll or an action), backing off
	// Failed counts events set aside for good (their dispatch could never succeed:
	// recorded with the reason, not retried); LastFailed is the latest, "<id>: <reason>".
	Failed     int        `json:"failed"`
	LastFailed string     `json:"lastFailed,omitempty"`
	FailedAt   *time.Time `json:"failedAt,omitempty"`

	RateLimits []RateStanding `json:"rateLimits"`

	// Set by listener.get only.
	Document string            `json:"document,omitempty"`
	Cursor   map[string]string `json:"cursor,omitempty"`
	HeldIDs  []string          `json:"heldIds,omitempty"` // the oldest 100 held; Held counts them all
}

// RateStanding is where one rate limit stands: "5 per 1h (5 used, next at 21:12)".
type RateStanding struct {
	Max    int        `json:"max"`
	Per    string     `json:"per"`
	Used   int        `json:"used"`
	NextAt *time.Time `json:"nextAt"` // when the window has room again; null when it has room
	Text   string     `json:"text"`
}

// ListenerListResult answers listener.list, by name.
type ListenerListResult struct {
	Listeners []Listener `json:"listeners"`
}

// ListenerNameParams names one listener.
type ListenerNameParams struct {
	Name string `json:"name"`
}

// ListenerResult wraps one listener.
type ListenerResult struct {
	Listener Listener `json:"listener"`
}

// ListenerPutParams writes a listener document (the TOML of a listener file) through
// the API; it is stored by the server and runs like a file's.
type ListenerPutParams struct {
	Name     string `json:"name"`
	Document string `json:"document"`
}

// ListenerEnableParams enables (true) or disables (false) a listener.
type ListenerEnableParams struct {
	Name    string `json:"name"`
	Enabled *bool  `json:"enabled"`
}

// The API, one declaration per method.
var (
	ListenerList   = wire.Declare[wire.Empty, ListenerListResult](MethodListenerList, "Listeners with their state, last and next poll, fires, held events and rate limits.", wire.ReadOnly)
	ListenerGet    = wire.Declare[ListenerNameParams, ListenerResult](MethodListenerGet, "One listener with its document, cursors and held events.", wire.ReadOnly)
	ListenerPut    = wire.Declare[ListenerPutParams, ListenerResult](MethodListenerPut, "Write a listener document (TOML) through the API; refused with the line when it does not parse.")
	ListenerRemove = wire.Declare[ListenerNameParams, wire.Empty](MethodListenerRemove, "Remove a listener written through the API.")
	ListenerEnable = wire.Declare[ListenerEnableParams, ListenerResult](MethodListenerEnable, "Enable or disable a listener.")
)
