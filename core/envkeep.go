package core

import (
	"fmt"
	"os"
	"path/filepath"

	"orcr/core/secretenv"
	"orcr/core/wire"
)

// An agent's env values (--env, a role's env) are credentials as often as not, and the
// record is shown by agent get/ls, broadcast in every event and written to the store. So
// the record names them (secretenv.Redacted for each value) and the values wait in a 0600
// file in the agent's state directory, read at each launch (a wake or a resume after a
// restart included) and removed with the state directory when the record is collected.
// An engine without a home has nowhere to keep them apart; its records keep them.

// keepEnv writes env's values beside a's state and puts only their names in the record.
func keepEnv(home string, a *wire.Agent, env map[string]string) error {
	a.Env = env
	if home == "" || len(env) == 0 {
		return nil
	}
	if err := secretenv.Save(filepath.Join(home, "agents", a.ID), env); err != nil {
		return fmt.Errorf("%s: %w", a.Path, err)
	}
	a.Env = secretenv.Redact(env)
	return nil
}

// dropEnv removes what keepEnv wrote for a record that was never stored.
func dropEnv(home, id string) {
	if home != "" {
		_ = os.RemoveAll(filepath.Join(home, "agents", id))
	}
}

// storedEnv is a's env with the values keepEnv put aside (secrets still named, unresolved).
func storedEnv(home string, a wire.Agent) (map[string]string, error) {
	if home == "" || !secretenv.IsRedacted(a.Env) {
		return a.Env, nil // a record from before values were kept apart holds them itself
	}
	env, ok, err := secretenv.Load(filepath.Join(home, "agents", a.ID))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the values of its env (%s) are gone from %s; run it again with --env",
			filepath.Join(home, "agents", a.ID, secretenv.FileName), filepath.Join(home, "agents", a.ID))
	}
	return env, nil
}

// envValues is a's env as its program gets it: the stored values, secrets resolved.
func envValues(home, secrets string, a wire.Agent) (map[string]string, error) {
	env, err := storedEnv(home, a)
	if err != nil {
		return nil, err
	}
	return secretenv.Resolve(env, secrets)
}
