import {
  CONTROLLER_LEVELS,
  MODEL_LEVELS,
  controllerAtLeast,
  isControllerAccess,
  isModelAccess,
  modelAtLeast,
} from '../../../core/access';

describe('access levels (Juju’s)', () => {
  it.each([
    ['login', 'login', true],
    ['login', 'add-model', false],
    ['add-model', 'login', true],
    ['add-model', 'superuser', false],
    ['superuser', 'add-model', true],
    ['superuser', 'superuser', true],
  ] as const)('controller %s is at least %s: %s', (have, need, expected) => {
    expect(controllerAtLeast(have, need)).toBe(expected);
  });

  it.each([
    [undefined, 'read', false],
    ['read', 'read', true],
    ['read', 'write', false],
    ['write', 'read', true],
    ['write', 'admin', false],
    ['admin', 'write', true],
  ] as const)('model %s is at least %s: %s', (have, need, expected) => {
    expect(modelAtLeast(have, need)).toBe(expected);
  });

  it('knows its levels and nothing else', () => {
    for (const level of CONTROLLER_LEVELS) expect(isControllerAccess(level)).toBe(true);
    for (const level of MODEL_LEVELS) expect(isModelAccess(level)).toBe(true);
    for (const other of ['read', 'owner', '', undefined, 1])
      expect(isControllerAccess(other)).toBe(false);
    for (const other of ['login', 'superuser', 'Admin', undefined])
      expect(isModelAccess(other)).toBe(false);
  });
});
