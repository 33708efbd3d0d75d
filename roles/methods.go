package roles

import (
	"context"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

// Methods are the role.* and history.list socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(roleapi.RoleList, func(ctx context.Context, _ *wire.Empty) (roleapi.RoleListResult, error) {
			rs, err := s.Roles(ctx)
			if rs == nil {
				rs = []roleapi.Role{}
			}
			return roleapi.RoleListResult{Roles: rs}, err
		}),
		wire.Handle(roleapi.RoleGet, func(ctx context.Context, p *roleapi.RoleNameParams) (roleapi.RoleResult, error) {
			return s.RoleGet(ctx, p.Name)
		}),
		wire.Handle(roleapi.RolePut, func(ctx context.Context, p *roleapi.RolePutParams) (roleapi.RoleResult, error) {
			return s.RolePut(ctx, *p)
		}),
		wire.Handle(roleapi.AgentHistory, func(ctx context.Context, p *roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
			return s.AgentHistory(ctx, *p)
		}),
	}
}
