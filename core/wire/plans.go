package wire

// Plans and the model catalog (DESIGN §8): the socket types of package orchestrate's
// plan service.

// Plan error codes.
const (
	// CodeNotARepo: plan.new's repo is not (inside) a git repository.
	CodeNotARepo = "not_a_repo"
	// CodeNotAllowed: the plan's state does not allow the request (approve a plan the
	// lead is still writing, reject an approved one); the message says what to do.
	CodeNotAllowed = "not_allowed"
	// CodePlanInvalid: the plan file has problems (approve refused); the message lists
	// them by line.
	CodePlanInvalid = "plan_invalid"
)
