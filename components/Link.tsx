// The console's link: Next's <Link> without prefetching. Every console page is dynamic and none has a loading
// boundary, so a prefetch fetches only the route's tree (about 200 bytes) and a click still makes the full
// request; yet each link in view cost two requests (the tree and an empty prefetch) once the page hydrated,
// about 30 server requests per page view, competing with the page's own data requests on the console's CPU.
import NextLink from 'next/link';
import type { ComponentProps } from 'react';

export default function Link(props: ComponentProps<typeof NextLink>) {
  return <NextLink prefetch={false} {...props} />;
}
