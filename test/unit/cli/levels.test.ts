import { grantChange, parseLevel, revokeChange } from '../../../cli/levels';

describe("grant and revoke: Juju's level arithmetic", () => {
  it('grant raises to the level named, from nothing or from below', () => {
    expect(grantChange(undefined, 'read')).toEqual({ kind: 'set', access: 'read' });
    expect(grantChange(undefined, 'admin')).toEqual({ kind: 'set', access: 'admin' });
    expect(grantChange('read', 'write')).toEqual({ kind: 'set', access: 'write' });
    expect(grantChange('write', 'admin')).toEqual({ kind: 'set', access: 'admin' });
    expect(grantChange('login', 'add-model')).toEqual({ kind: 'set', access: 'add-model' });
    expect(grantChange('add-model', 'superuser')).toEqual({ kind: 'set', access: 'superuser' });
  });

  it("grant never lowers: the same level or a lower one is refused in Juju's words", () => {
    expect(grantChange('write', 'write')).toEqual({
      kind: 'refuse',
      message: 'user already has "write" access or greater',
    });
    expect(grantChange('admin', 'read')).toEqual({
      kind: 'refuse',
      message: 'user already has "read" access or greater',
    });
    expect(grantChange('superuser', 'add-model')).toEqual({
      kind: 'refuse',
      message: 'user already has "add-model" access or greater',
    });
    expect(grantChange('login', 'login')).toMatchObject({ kind: 'refuse' });
  });

  it('revoke leaves the level below the one revoked; revoking read removes all access', () => {
    expect(revokeChange('bob', 'admin', 'admin')).toEqual({ kind: 'set', access: 'write' });
    expect(revokeChange('bob', 'write', 'write')).toEqual({ kind: 'set', access: 'read' });
    expect(revokeChange('bob', 'read', 'read')).toEqual({ kind: 'remove' });
    // revoking a lower level than held takes everything from it upwards
    expect(revokeChange('bob', 'admin', 'write')).toEqual({ kind: 'set', access: 'read' });
    expect(revokeChange('bob', 'admin', 'read')).toEqual({ kind: 'remove' });
    expect(revokeChange('bob', 'superuser', 'superuser')).toEqual({
      kind: 'set',
      access: 'add-model',
    });
    expect(revokeChange('bob', 'superuser', 'add-model')).toEqual({ kind: 'set', access: 'login' });
    expect(revokeChange('bob', 'add-model', 'add-model')).toEqual({ kind: 'set', access: 'login' });
  });

  it('revoke never raises: a level not held, or no access at all, is refused', () => {
    expect(revokeChange('bob', 'read', 'admin')).toEqual({
      kind: 'refuse',
      message: 'user "bob" does not have "admin" access (has "read")',
    });
    expect(revokeChange('bob', undefined, 'read')).toEqual({
      kind: 'refuse',
      message: 'user "bob" has no access to revoke',
    });
    expect(revokeChange('bob', 'login', 'superuser')).toMatchObject({ kind: 'refuse' });
  });

  it('login cannot be revoked: it is what every user of the pool has', () => {
    expect(revokeChange('bob', 'superuser', 'login')).toEqual({
      kind: 'refuse',
      message:
        'cannot revoke "login" access: every user has it (use "provisioner remove-user bob")',
    });
  });

  it('a level must fit whether a model was named', () => {
    expect(parseLevel('grant', 'write', 'demo')).toBe('write');
    expect(parseLevel('grant', 'superuser', undefined)).toBe('superuser');
    expect(() => parseLevel('grant', 'superuser', 'demo')).toThrow(
      /^You have specified a controller access permission "superuser"\. If you intended to change controller access, do not specify a model name/,
    );
    expect(() => parseLevel('revoke', 'write', undefined)).toThrow(
      /^You have specified a model access permission "write"\. If you intended to change model access, you need to specify a model name/,
    );
    expect(() => parseLevel('grant', 'owner', 'demo')).toThrow(
      'model access permission "owner" not valid (one of read, write, admin)',
    );
    expect(() => parseLevel('grant', 'root', undefined)).toThrow(
      'controller access permission "root" not valid (one of login, add-model, superuser)',
    );
  });
});
