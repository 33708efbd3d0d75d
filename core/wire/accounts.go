package wire

// Events of accounts and budgets.
const (
	// EventUsageReading says a limit reading arrived; Data["reading"] is the
	// LimitReading. The dashboard redraws its usage bars on it.
	EventUsageReading = "usage.reading"
)

// CodeUnknownAccount: a spawn or budget names an account label that is not configured.
const CodeUnknownAccount = "unknown_account"
