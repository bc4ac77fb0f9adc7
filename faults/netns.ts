// Hosts of the fault rig's own: a network namespace per service instance, joined to
// this (the root) namespace by a veth pair with addresses of the rig's own. The
// instance reaches PostgreSQL and Redis through fault proxies listening on the root
// side of its pair, and the rig reaches the instance on the namespace side, so a link
// taken down cuts the instance off as a pulled cable would. Everything made here is
// named after the rig's process, and removed on exit, even after a failure.
import { execFileSync } from 'node:child_process'

export interface Host {
  /** The namespace's name. */
  name: string
  /** The address of the rig's side (where the proxies listen), and of the instance's. */
  rootAddress: string
  address: string
  /** The veth end in the root namespace: down is a pulled cable. */
  rootLink: string
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })

const made: Host[] = []

/** A namespace with loopback up and one veth pair to the root namespace, on 10.231.<index>.0/30. */
export function makeHost(index: number): Host {
  const tag = `pf${process.pid % 100_000}`
  const host: Host = { name: `${tag}-${index}`, rootAddress: `10.231.${index}.1`, address: `10.231.${index}.2`, rootLink: `${tag}h${index}` }
  const nsLink = `${tag}n${index}`
  ip('netns', 'add', host.name)
  made.push(host)
  ip('link', 'add', host.rootLink, 'type', 'veth', 'peer', 'name', nsLink)
  ip('link', 'set', nsLink, 'netns', host.name)
  ip('addr', 'add', `${host.rootAddress}/30`, 'dev', host.rootLink)
  ip('link', 'set', host.rootLink, 'up')
  ip('netns', 'exec', host.name, 'ip', 'addr', 'add', `${host.address}/30`, 'dev', nsLink)
  ip('netns', 'exec', host.name, 'ip', 'link', 'set', nsLink, 'up')
  ip('netns', 'exec', host.name, 'ip', 'link', 'set', 'lo', 'up')
  return host
}

export function setLink(host: Host, up: boolean): void {
  ip('link', 'set', host.rootLink, up ? 'up' : 'down')
}

/** Removes every namespace and link made (deleting a namespace deletes its veth pair). Safe to call twice. */
export function removeHosts(): void {
  for (const host of made.splice(0)) {
    try {
      ip('link', 'del', host.rootLink)
    } catch {
      // gone with its namespace already
    }
    try {
      ip('netns', 'del', host.name)
    } catch {
      // already removed
    }
  }
}

/** Whether this process may make namespaces (root, and iproute2 present). */
export function canMakeHosts(): string | undefined {
  if (process.getuid?.() !== 0) return 'the fault rig makes network namespaces: run it as root'
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' })
  } catch {
    return 'the fault rig needs iproute2 (`ip`)'
  }
  return undefined
}
