import { requireSafeTransport } from '../../../cli/commands/login';
import { CliError } from '../../../cli/errors';

describe('login --user sends a password only over https or to this machine', () => {
  it.each([
    'https://api.example.test',
    'https://cognito-idp.eu-west-1.amazonaws.com/',
    'http://127.0.0.1:8080',
    'http://localhost:5000/',
    'http://[::1]:4566',
  ])('allows %s', (url) => {
    expect(() => requireSafeTransport('API', url)).not.toThrow();
  });

  it.each([
    ['http://api.example.test', 'http://api.example.test'],
    ['http://10.0.0.5:5000/', 'http://10.0.0.5:5000'],
    ['http://127.0.0.1.evil.test/', 'http://127.0.0.1.evil.test'],
    ['ftp://localhost/', 'ftp://localhost'],
  ])('refuses %s', (url, origin) => {
    expect(() => requireSafeTransport('user pool endpoint', url)).toThrow(
      new CliError(
        `refusing to send a password to the user pool endpoint ${origin}: it must be https (plain http only to 127.0.0.1 or localhost)`,
      ),
    );
  });

  it('refuses what is not a URL', () => {
    expect(() => requireSafeTransport('API', 'not a url')).toThrow(
      new CliError('the API not a url is not a URL'),
    );
  });
});
