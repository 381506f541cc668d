import { request, type Dispatcher } from 'undici';

export interface PageResponse {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
  setCookies: string[];
}

/** A tiny browser for the status page: keeps cookies, posts forms, does not follow redirects. */
export class PageClient {
  readonly cookies = new Map<string, string>();
  /** `dispatcher`: an undici Agent, for one that connects from a given local address. */
  constructor(
    readonly base: string,
    readonly dispatcher?: Dispatcher,
  ) {}

  async send(method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<PageResponse> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (form) {
      body = new URLSearchParams(form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await request(`${this.base}${path}`, { method, headers, body, dispatcher: this.dispatcher });
    const text = await res.body.text();
    const raw = res.headers['set-cookie'];
    const setCookies = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
    for (const c of setCookies) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i);
      const value = pair.slice(i + 1);
      if (/Max-Age=0/.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.statusCode, text, headers: res.headers as never, setCookies };
  }

  get(path: string) {
    return this.send('GET', path);
  }

  post(path: string, form: Record<string, string>) {
    return this.send('POST', path, form);
  }

  /** The value of a hidden `_csrf` field on the last page given. */
  static csrf(html: string): string {
    const m = /name="_csrf" value="([^"]+)"/.exec(html);
    if (!m) throw new Error('no _csrf field on the page');
    return m[1];
  }

  async login(password: string): Promise<PageResponse> {
    const page = await this.get('/');
    return this.post('/login', { password, _csrf: PageClient.csrf(page.text) });
  }
}
