/** Test helper: a raw HTTP GET with any headers (fetch will not let a test set Host), for the control API's Host and Origin checks. */
import { request as httpRequest } from 'node:http';
import { splitHostPort } from '../src/node/api.js';

export function rawGet(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const { host, port } = splitHostPort(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, path, method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
