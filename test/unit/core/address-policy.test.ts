import { describe, expect, it } from 'vitest';
import {
  addressRange,
  describeHost,
  inRanges,
  isLocalhostName,
  isPublicAddress,
  scrubAddresses,
} from '../../../src/core/address-policy.ts';

describe('address policy', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['169.254.169.254', 'linkLocal'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:0:a9fe:a9fe', 'linkLocal'], // IPv4-translated (RFC 6145)
    ['::7f00:1', 'reserved'], // IPv4-compatible (deprecated)
    ['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
    ['2002:a00:1::1', 'private'], // 6to4 of 10.0.0.1
    ['64:ff9b::a9fe:a9fe', 'linkLocal'], // NAT64 of 169.254.169.254
    ['64:ff9b:1::1', 'reserved'], // local-use NAT64 prefix
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo, client 127.0.0.1 (obfuscated)
    ['2001:db8::1', 'reserved'],
    ['not-an-ip', 'invalid'],
  ])('%s is %s', (ip, range) => {
    expect(addressRange(ip)).toBe(range);
    expect(isPublicAddress(ip)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.215.14',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (ip) => {
    expect(addressRange(ip)).toBe('unicast');
  });

  it('matches CIDR ranges and single addresses, also for IPv4-mapped input', () => {
    expect(inRanges('10.1.2.3', ['10.1.0.0/16'])).toBe(true);
    expect(inRanges('10.2.0.1', ['10.1.0.0/16'])).toBe(false);
    expect(inRanges('::ffff:10.1.2.3', ['10.1.0.0/16'])).toBe(true);
    expect(inRanges('127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(inRanges('fd00::5', ['fd00::/8'])).toBe(true);
    expect(inRanges('fd00::5', ['10.0.0.0/8'])).toBe(false);
    expect(inRanges('10.0.0.1', [])).toBe(false);
  });

  it('knows localhost names', () => {
    for (const h of ['localhost', 'LOCALHOST', 'localhost.', 'a.localhost', 'x.y.localhost.'])
      expect(isLocalhostName(h)).toBe(true);
    for (const h of ['localhost.example.com', 'mylocalhost', 'example.com']) expect(isLocalhostName(h)).toBe(false);
  });

  it('names hosts without ever printing something that reads as an address', () => {
    expect(describeHost('api.example.com')).toBe('host api.example.com');
    expect(describeHost('API.Example.com.')).toBe('host api.example.com');
    expect(describeHost('127.0.0.1')).toBe('an IP-literal host');
    expect(describeHost('[::1]')).toBe('an IP-literal host');
    expect(describeHost('127.0.0.1.nip.io')).toBe('host *.nip.io');
    expect(describeHost('app.10.0.0.1.sslip.io')).toBe('host app.*.sslip.io');
    expect(describeHost('10-0-0-1.sslip.io')).toBe('host *.sslip.io');
    expect(describeHost('fe80--1.sslip.io')).toBe('host *.sslip.io');
    expect(describeHost('7f000001.rbndr.example')).toBe('host *.rbndr.example');
    expect(describeHost('k8s1.2zz.example')).toBe('host *.example');
    expect(describeHost('s3.us-east-1.amazonaws.com')).toBe('host s3.us-east-1.amazonaws.com');
    expect(describeHost('api2.example.com')).toBe('host api2.example.com');
  });

  it('scrubs IPv4 and IPv6 addresses from free text, and nothing else', () => {
    expect(scrubAddresses('connect ECONNREFUSED 127.0.0.1:5432')).toBe('connect ECONNREFUSED [address]:5432');
    expect(scrubAddresses('to [::1]:80 and http://[2001:db8::1]:8080/x')).toBe(
      'to [address]:80 and http://[address]:8080/x',
    );
    expect(scrubAddresses('fe80::1%eth0 and ::ffff:10.0.0.1, 2001:db8::1.')).toBe(
      '[address] and [address], [address].',
    );
    const untouched = 'at 2026-11-21T23:48:46.969Z v26.2.0 Foo::bar 12:30:00 1.2.3.4.5';
    expect(scrubAddresses(untouched)).toBe(untouched);
  });
});
