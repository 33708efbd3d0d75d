package confine

import "io"

// PrepareAndExec is a spare launcher's two halves (Await without its socket):
// Prepare the ruleset of the policy in file, call between (the test changes the
// folders), then apply the policy in file, as it is then, with the prepared ruleset
// and exec argv (it returns only when nothing was exec'd).
func PrepareAndExec(file string, argv []string, between func(), stderr io.Writer) error {
	p, err := Load(file)
	if err != nil {
		return err
	}
	c := &Rulesets{}
	if !c.Prepare(p) {
		return io.ErrUnexpectedEOF
	}
	between()
	return execWith(file, argv, stderr, c)
}
